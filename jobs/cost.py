"""What a run cost: usd = usd_per_hour x instances x scoring hours, and per million rows written.

Nightly scoring is bought by the instance-hour. The price is --usd-per-hour, else the on-demand
price of the instance type in jobs/prices.py; the type is --instance-type, else what the
executors read from EC2 instance metadata (engines/imds.py). A type with no price is a warning and
no cost, never a failed run.
"""
from __future__ import annotations

from collections import Counter

from jobs import prices


def run_cost(tasks: list[dict], scoring_seconds: float, rows_out: int, *, instance_type: str | None = None,
             usd_per_hour: float | None = None, instances: int | None = None) -> dict:
    """The summary's `cost`; `instances` defaults to the distinct executor hosts in `tasks`."""
    warning = None
    if not instance_type:
        instance_type, warning = _reported_type(tasks)
    price_source = "--usd-per-hour" if usd_per_hour is not None else None
    if usd_per_hour is None and instance_type:
        usd_per_hour = prices.USD_PER_HOUR.get(instance_type)
        if usd_per_hour is None:
            warning = (f"no on-demand price for instance type {instance_type!r} in jobs/prices.py "
                       f"({prices.REGION}, recorded {prices.RECORDED}); pass --usd-per-hour for a cost")
        else:
            price_source = f"{prices.REGION} on-demand, recorded {prices.RECORDED}"
    instances = instances or len({t["host"] for t in tasks})
    instance_hours = instances * scoring_seconds / 3600
    usd = usd_per_hour * instance_hours if usd_per_hour is not None else None
    cost = {
        "instance_type": instance_type, "usd_per_hour": usd_per_hour, "price_source": price_source,
        "instances": instances, "instance_hours": _digits(instance_hours),
        "usd": _digits(usd) if usd is not None else None,
        "usd_per_million_rows": _digits(usd / rows_out * 1e6) if usd is not None and rows_out else None,
    }
    return {**cost, "warning": warning} if warning else cost


def _reported_type(tasks: list[dict]) -> tuple[str | None, str | None]:
    """The type most executor hosts reported, and a warning when they do not all agree."""
    by_host = {t["host"]: t["instance_type"] for t in tasks if t.get("instance_type")}
    if not by_host:
        return None, None
    ranked = Counter(by_host.values()).most_common()
    if len(ranked) == 1:
        return ranked[0][0], None
    return ranked[0][0], (f"executor hosts report several instance types ({', '.join(sorted(t for t, _ in ranked))}); "
                          f"priced as {ranked[0][0]}; pass --instance-type or --usd-per-hour")


def _digits(x: float) -> float:
    """Six significant digits: a test run costs a fraction of a cent, a nightly run hundreds of dollars."""
    return float(f"{x:.6g}")


def dollars(usd: float) -> str:
    return f"${usd:,.2f}" if usd >= 1 else f"${usd:.3g}"


def describe(cost: dict) -> str:
    """For people: $ per million rows and how it was reached, or why there is none; a warning
    line when there is one."""
    if cost["usd"] is None:
        if "warning" in cost:
            return f"warning: no cost in the summary: {cost['warning']}"
        return "cost: unknown (no --instance-type or --usd-per-hour, and no EC2 instance metadata)"
    per_million = cost["usd_per_million_rows"]
    headline = f"{dollars(per_million)} per million rows" if per_million is not None else "no rows written"
    line = (f"cost: {headline} "
            f"({dollars(cost['usd'])} for {cost['instance_hours']:.4g} instance-hours, "
            f"{cost['instances']} x {cost['instance_type'] or 'instance'} at ${cost['usd_per_hour']:g}/h)")
    return f"{line}\nwarning: {cost['warning']}" if "warning" in cost else line
