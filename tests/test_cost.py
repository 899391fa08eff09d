"""The run's cost: arithmetic, where the instance type comes from, and IMDSv2 on a local server."""
import http.server
import socket
import threading
import time

import pytest

from engines import imds
from jobs import prices
from jobs.cost import describe, run_cost

# Two executor hosts, three tasks; what each host read from instance metadata.
TASKS = [{"host": "ip-10-0-0-1", "instance_type": "g5.2xlarge"}, {"host": "ip-10-0-0-1", "instance_type": "g5.2xlarge"},
         {"host": "ip-10-0-0-2", "instance_type": "g5.2xlarge"}]


def test_usd_is_price_times_instances_times_scoring_hours():
    cost = run_cost(TASKS, scoring_seconds=1800, rows_out=2_000_000, instance_type="c7i.xlarge")
    assert cost["usd_per_hour"] == prices.USD_PER_HOUR["c7i.xlarge"] == 0.1785
    assert cost["instances"] == 2 and cost["instance_hours"] == 1.0  # two distinct hosts for half an hour
    assert cost["usd"] == pytest.approx(0.1785)
    assert cost["usd_per_million_rows"] == pytest.approx(0.1785 / 2)
    assert "warning" not in cost and cost["price_source"] == "us-east-1 on-demand, recorded 2026-12-01"


def test_flags_override_price_and_instance_count():
    cost = run_cost(TASKS, scoring_seconds=3600, rows_out=500_000, instance_type="c7i.xlarge", usd_per_hour=2.5,
                    instances=4)
    assert (cost["usd_per_hour"], cost["price_source"], cost["instances"]) == (2.5, "--usd-per-hour", 4)
    assert cost["usd"] == pytest.approx(10.0) and cost["usd_per_million_rows"] == pytest.approx(20.0)


def test_instance_type_flag_wins_over_instance_metadata():
    assert run_cost(TASKS, 60, 100, instance_type="m7i.large")["instance_type"] == "m7i.large"


def test_instance_type_from_instance_metadata_without_the_flag():
    cost = run_cost(TASKS, 3600, 1_000_000)
    assert cost["instance_type"] == "g5.2xlarge" and cost["usd"] == pytest.approx(2 * 1.212)


def test_no_instance_type_anywhere_means_no_cost_and_no_warning():
    cost = run_cost([{"host": "laptop", "instance_type": None}], 60, 100)
    assert cost["instance_type"] is None and cost["usd"] is None and cost["usd_per_million_rows"] is None
    assert "warning" not in cost and describe(cost).startswith("cost: unknown")


def test_unknown_instance_type_warns_and_has_no_cost():
    cost = run_cost(TASKS, 60, 100, instance_type="x9z.huge")
    assert cost["usd"] is None and cost["usd_per_hour"] is None and cost["instances"] == 2
    assert "no on-demand price for instance type 'x9z.huge'" in cost["warning"] and "--usd-per-hour" in cost["warning"]
    assert describe(cost).startswith("warning: no cost in the summary")


def test_hosts_of_several_types_are_priced_as_the_commonest_with_a_warning():
    tasks = TASKS + [{"host": "ip-10-0-0-3", "instance_type": "g6.xlarge"}, {"host": "ip-10-0-0-4", "instance_type": "g5.2xlarge"}]
    cost = run_cost(tasks, 3600, 1_000_000)
    assert cost["instance_type"] == "g5.2xlarge" and cost["instances"] == 4
    assert "several instance types (g5.2xlarge, g6.xlarge)" in cost["warning"]


def test_describe_gives_dollars_per_million_rows():
    line = describe(run_cost(TASKS, 1800, 2_000_000, instance_type="c7i.xlarge"))
    assert line == "cost: $0.0892 per million rows ($0.178 for 1 instance-hours, 2 x c7i.xlarge at $0.1785/h)"


def test_price_table_covers_the_families_people_score_on():
    families = {name.split(".")[0] for name in prices.USD_PER_HOUR}
    assert families == {"c7i", "m7i", "r7i", "g4dn", "g5", "g6", "g6e", "p4d", "p5", "inf1", "inf2"}
    assert all(0 < usd < 100 for usd in prices.USD_PER_HOUR.values())


class FakeIMDS(http.server.BaseHTTPRequestHandler):
    """Speaks IMDSv2 only: a PUT for a token, then GETs that carry it."""
    TOKEN = "token-123"

    def do_PUT(self):
        ok = self.path == "/latest/api/token" and self.headers.get("X-aws-ec2-metadata-token-ttl-seconds")
        self._reply(200 if ok else 400, self.TOKEN if ok else "")

    def do_GET(self):
        if self.headers.get("X-aws-ec2-metadata-token") != self.TOKEN:
            return self._reply(401, "")
        if self.path != "/latest/meta-data/instance-type":
            return self._reply(404, "")
        self._reply(200, "g6e.xlarge")

    def _reply(self, code, body):
        self.send_response(code)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, *args):
        pass


@pytest.fixture
def serve():
    servers = []

    def start(handler) -> str:
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_port}"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def test_imdsv2_token_then_instance_type(serve):
    assert imds.instance_type(serve(FakeIMDS)) == "g6e.xlarge"


def test_metadata_service_that_refuses_the_token_gives_none(serve):
    class V1Only(FakeIMDS):
        def do_PUT(self):
            self._reply(405, "")

    assert imds.instance_type(serve(V1Only)) is None


def test_silent_metadata_service_gives_none_within_the_timeout():
    with socket.socket() as listener:  # accepts connections, never answers
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        t0 = time.monotonic()
        assert imds.instance_type(f"http://127.0.0.1:{listener.getsockname()[1]}", timeout=0.3) is None
        assert time.monotonic() - t0 < 1.0


def test_nothing_is_asked_off_ec2(tmp_path, monkeypatch):
    vendor = tmp_path / "sys_vendor"
    vendor.write_text("QEMU\n")
    monkeypatch.setattr(imds, "_EC2_MARKERS", ((str(vendor), "amazon ec2"), (str(tmp_path / "absent"), "ec2")))
    assert not imds.on_ec2()
    vendor.write_text("Amazon EC2\n")
    assert imds.on_ec2()
