"""``python -m emr``: run the scoring jobs on EMR on EC2 (GPU) and EMR on EKS (Inferentia).

Sub-commands::

    profiles          list GPU cluster profiles
    package           build dist/: wheel, --py-files zip, venv-pack environment archive
    preflight         check a GPU run offline: environment archive, artifact, profile, release
    stage             upload jobs, package, environment, scripts and a model to an S3 prefix
    create-cluster    create a GPU cluster from a profile
    add-step          add a scoring step (command-runner.jar spark-submit ...), optionally wait
    wait              wait for a step; print its state, failure reason and log location
    terminate         terminate a cluster
    eks-submit        start the job on EMR on EKS with one NeuronCore per executor
    eks-wait          wait for an EMR on EKS job run

Every AWS sub-command takes ``--endpoint-url`` (or ``AWS_ENDPOINT_URL``), ``--region``,
``--aws-profile`` and ``--dry-run`` (print each request as a JSON line on stdout instead of
sending it, and everything else on stderr; the wait commands describe once and do not poll). ``package --dry-run`` lists what it would
build; ``profiles`` sends nothing, so its ``--dry-run`` changes nothing; ``preflight --dry-run``
lists its checks and reads nothing.
Exit codes: 0 ok; 1 an AWS call or a step failed, or preflight found a problem; 2 bad arguments
or local input.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path
from typing import Any, Callable, Sequence

from emr import layout as L
from emr.aws import Clients
from emr import packaging
from emr.bootstrap_env import BootstrapEnv
from emr.cluster import DEFAULT_INSTANCE_PROFILE, DEFAULT_SERVICE_ROLE, PYTHON_ENVS
from emr.errors import EmrError
from emr.releases import DEFAULT, EMR7
from emr.k8s.sizing import DEFAULT_INSTANCE_TYPE, INF2
from jobs.cli import backend_choices

L_REPO = Path(__file__).resolve().parent.parent  # the repository (jobs/, dist/) when run from a checkout
_RUN_DATE_HELP = "YYYY-MM-DD (Airflow passes {{ ds }})"


def _dry_run(help_text: str) -> argparse.ArgumentParser:
    parent = argparse.ArgumentParser(add_help=False)
    parent.add_argument("--dry-run", action="store_true", help=help_text)
    return parent


def _common() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False, parents=[_dry_run(
        "print every request as a JSON line instead of sending it (wait commands: describe once)")])
    aws = common.add_argument_group("AWS connection")
    aws.add_argument("--endpoint-url", help="send requests here (default: AWS_ENDPOINT_URL, else AWS)")
    aws.add_argument("--region", help="AWS region (default: the usual boto3 chain)")
    aws.add_argument("--aws-profile", help="named profile from the AWS config files")
    return common


def _python_env() -> argparse.ArgumentParser:
    """The executors' Python: create-cluster builds it, preflight checks it (emr/bootstrap_env.py)."""
    parent = argparse.ArgumentParser(add_help=False)
    g = parent.add_argument_group("executors' Python")
    g.add_argument("--python-env", choices=PYTHON_ENVS, default="archive",
                   help="archive: steps ship the venv-pack archive; bootstrap: install the wheel "
                        "on every node at start (for multi-GB CUDA stacks)")
    g.add_argument("--pip-extras", default=f"{packaging.EXECUTOR_EXTRAS},gpu",
                   help="extras for --python-env bootstrap: gpu installs torch and TensorRT first, torch-cuda "
                        "the CUDA torch alone (emr/gpu_envs.py)")
    g.add_argument("--torch-index-url", metavar="URL",
                   help="PyTorch's CUDA 12.6 wheel index: for bootstrap with a gpu or torch-cuda extra (required "
                        "then), and preflight --online")
    g.add_argument("--nvidia-index-url", metavar="URL",
                   help="NVIDIA's package index (TensorRT): for bootstrap with a gpu extra (required then), "
                        "and preflight --online")
    return parent


def _bootstrap_env(args: argparse.Namespace) -> BootstrapEnv:
    return BootstrapEnv(args.pip_extras, args.torch_index_url, args.nvidia_index_url)


def _job_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("job")
    g.add_argument("--job", required=True, choices=L.JOBS)
    g.add_argument("--input", required=True, help="input table path (s3://...)")
    g.add_argument("--output", required=True,
                   help="output root (s3://...), or an Iceberg table in the Glue Data Catalog: "
                        "iceberg:<catalog>.<database>.<table> (README.md, \"Output tables\")")
    g.add_argument("--model", required=True, help="model artifact (s3://.../ or a path on the nodes)")
    g.add_argument("--run-date", required=True, help=_RUN_DATE_HELP)
    g.add_argument("--cache-root", metavar="S3_URI", default=None,
                   help="result cache root; the job gets --cache <root>/<job>/ (default: no cache)")
    g.add_argument("--runs-dir", metavar="S3_URI", default=None,
                   help="with an Iceberg --output: the job's --runs-dir (leases, summaries, reports)")
    g.add_argument("--iceberg-warehouse", metavar="S3_URI", default=None,
                   help="with an Iceberg --output: the warehouse of its Glue-backed catalog (s3://...)")
    g.add_argument("job_flags", nargs="*", metavar="-- JOB_FLAGS",
                   help="further job flags after `--`, e.g. -- --backend tensorrt --batch-tokens 8192")


def _wait_args(p: argparse.ArgumentParser, default_poll: float = 30) -> None:
    p.add_argument("--poll", type=float, default=default_poll, help="seconds between polls (default %(default)s)")
    p.add_argument("--timeout", type=float, default=6 * 3600, help="give up after this many seconds (default %(default)s)")


def _conf(values: Sequence[str]) -> dict[str, str]:
    out = {}
    for item in values:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise EmrError(f"expected KEY=VALUE, got {item!r}", exit_code=2)
        out[key] = value
    return out


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m emr", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    common, python_env = _common(), _python_env()

    sub.add_parser("profiles", help="list GPU cluster profiles",
                   parents=[_dry_run("accepted like on every sub-command; profiles sends nothing anyway")])

    p = sub.add_parser("package", help="build dist/: wheel, py-files zip, environment archive",
                       parents=[_dry_run("list what would be built and build nothing")])
    p.add_argument("--dist", type=Path, default=L_REPO / "dist")
    p.add_argument("--no-env", action="store_true", help="skip the venv-pack archive")
    p.add_argument("--extras", default=packaging.EXECUTOR_EXTRAS, help="extras installed in the environment (default %(default)s)")
    p.add_argument("--release-label", default=DEFAULT.default_label,
                   help="the EMR release the archive is for: its line's constraints (default %(default)s)")

    p = sub.add_parser("preflight", help="check a GPU run before it starts: environment, artifact, profile, "
                       "release, driver; --online: the package indexes",
                       parents=[_dry_run("list the checks and read nothing (preflight sends nothing anyway)"),
                                python_env])
    p.add_argument("--profile", required=True, help="GPU profile: see `python -m emr profiles`")
    p.add_argument("--env-archive", type=Path, default=L_REPO / "dist" / L.ENV_ARCHIVE,
                   help="the environment archive the steps will ship, with --python-env archive "
                        "(default %(default)s)")
    p.add_argument("--model", type=Path, help="a local artifact folder (its manifest.json) to check too")
    p.add_argument("--release-label", default=None, help="EMR release (default from emr.releases)")
    p.add_argument("--backend", default="auto", choices=backend_choices(),
                   help="the job's --backend (default auto: the artifact's)")
    p.add_argument("--driver-version", metavar="VERSION",
                   help="the GPU nodes' NVIDIA driver (nvidia-smi --query-gpu=driver_version), checked against "
                        "the environment's CUDA stack")
    p.add_argument("--online", action="store_true",
                   help="also ask the package indexes given by --torch-index-url, --nvidia-index-url and "
                        "--neuron-index-url for the stacks' pins (emr/stacks.py)")
    p.add_argument("--neuron-index-url", metavar="URL", help="the Neuron pip repository, for --online")

    p = sub.add_parser("stage", parents=[common], help="upload what a run needs to an S3 prefix")
    p.add_argument("--prefix", required=True, help="s3://bucket/prefix/ for this deployment")
    p.add_argument("--dist", type=Path, default=L_REPO / "dist", help="built packages (default %(default)s)")
    p.add_argument("--jobs-dir", type=Path, default=L_REPO / "jobs")
    p.add_argument("--model", help="a local artifact folder to upload, or s3://... to check")
    p.add_argument("--no-env", action="store_true",
                   help="do not upload the environment archive (bootstrap-installed environment)")
    p.add_argument("--force", action="store_true",
                   help="replace a model already staged under the same name and version with another artifact")

    p = sub.add_parser("create-cluster", parents=[common, python_env], help="create a GPU cluster from a profile")
    p.add_argument("--profile", required=True, help="GPU profile: see `python -m emr profiles`")
    p.add_argument("--prefix", required=True, help="the staged prefix (scripts, package)")
    p.add_argument("--log-uri", required=True, help="s3://... for cluster and step logs")
    p.add_argument("--name", default="accel-scoring")
    p.add_argument("--release-label", default=DEFAULT.default_label,
                   help=f"EMR release (default %(default)s); EMR 7: {EMR7.default_label}")
    p.add_argument("--core-count", type=int, help="core nodes (default from the profile)")
    p.add_argument("--fleet", action="store_true",
                   help="instance fleets: the profile's GPU instance types in any --subnet-id, "
                        "AM on core nodes")
    p.add_argument("--spot-task-count", type=int, default=0,
                   help="Spot GPU task nodes, with --fleet (default %(default)s)")
    p.add_argument("--cpu-core-type", metavar="TYPE",
                   help="stage-level layout, with --fleet and EMR 8: CPU core nodes of this type, GPUs on "
                        "task nodes only, dynamic allocation on")
    p.add_argument("--gpu-task-count", type=int, default=0,
                   help="On-Demand GPU task nodes, with --cpu-core-type (default %(default)s)")
    p.add_argument("--subnet-id", action="append", default=[],
                   help="EC2 subnet; repeatable with --fleet (EMR picks one with capacity)")
    p.add_argument("--key-name")
    p.add_argument("--instance-profile", default=DEFAULT_INSTANCE_PROFILE)
    p.add_argument("--service-role", default=DEFAULT_SERVICE_ROLE)
    p.add_argument("--idle-timeout", type=int, default=3600, help="auto-terminate after idle seconds (0: never)")
    p.add_argument("--tag", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                   help="extra spark-defaults for the cluster")
    p.add_argument("--no-role-check", action="store_true", help="skip the IAM role existence check")
    p.add_argument("--wait", action="store_true", help="wait until the cluster is ready")
    _wait_args(p)

    p = sub.add_parser("add-step", parents=[common], help="add a scoring step to a cluster")
    p.add_argument("--cluster-id", required=True)
    p.add_argument("--prefix", required=True, help="the staged prefix")
    p.add_argument("--python-env", choices=PYTHON_ENVS, default="archive")
    p.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="extra --conf for spark-submit")
    p.add_argument("--action-on-failure", default="CONTINUE",
                   choices=("CONTINUE", "CANCEL_AND_WAIT", "TERMINATE_CLUSTER"))
    p.add_argument("--wait", action="store_true", help="wait for the step and print its outcome")
    _job_args(p)
    _wait_args(p)

    p = sub.add_parser("wait", parents=[common], help="wait for a step to end")
    p.add_argument("--cluster-id", required=True)
    p.add_argument("--step-id", required=True)
    _wait_args(p)

    p = sub.add_parser("terminate", parents=[common], help="terminate a cluster")
    p.add_argument("--cluster-id", required=True)
    p.add_argument("--force", action="store_true",
                   help="terminate although steps are running or waiting (they end unfinished)")

    p = sub.add_parser("eks-submit", parents=[common], help="run the job on EMR on EKS (Inferentia)")
    p.add_argument("--virtual-cluster-id", required=True)
    p.add_argument("--execution-role-arn", required=True)
    p.add_argument("--image", required=True, help="the Neuron image built from emr/k8s/Dockerfile")
    p.add_argument("--prefix", required=True, help="the staged prefix")
    p.add_argument("--release-label", default=DEFAULT.default_eks_label,
                   help=f"EMR on EKS release (default %(default)s); Spark 3.5: {EMR7.default_eks_label}")
    p.add_argument("--log-uri", help="s3://... for driver and executor logs")
    p.add_argument("--executors", type=int, default=2, help="executors, one NeuronCore each")
    p.add_argument("--instance-type", default=DEFAULT_INSTANCE_TYPE, choices=sorted(INF2),
                   help="the inf2 size executors are sized for and pinned to (default %(default)s)")
    p.add_argument("--executor-scheduler", metavar="NAME",
                   help="Kubernetes scheduler for executors: the Neuron scheduler extension's (my-scheduler), "
                        "which makes the device plugin name each executor's NeuronCore")
    p.add_argument("--client-token", help="idempotency token (same token, same job run)")
    p.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--wait", action="store_true")
    _job_args(p)
    _wait_args(p)

    p = sub.add_parser("eks-wait", parents=[common], help="wait for an EMR on EKS job run")
    p.add_argument("--virtual-cluster-id", required=True)
    p.add_argument("--job-run-id", required=True)
    p.add_argument("--log-uri")
    _wait_args(p)
    return parser



def _echo(text: str) -> None:
    print(text, flush=True)


def _clients(args: argparse.Namespace) -> Clients:
    return Clients(endpoint_url=args.endpoint_url, region=args.region,
                   profile=args.aws_profile, dry_run=args.dry_run, out=args.requests_out)


def cmd_profiles(args: argparse.Namespace) -> int:
    from emr import gpu_envs
    from emr.profiles import PROFILES

    for p in PROFILES.values():
        _echo(f"{p.name:6} {p.instance_type:14} {p.gpus_per_instance} x {p.gpu:16} "
              f"executor {p.executor_cores} cores {p.executor_memory_mb // 1024}+"
              f"{p.executor_memory_overhead_mb // 1024} GiB, {p.tasks_per_gpu} tasks/GPU, "
              f"--fleet {'/'.join(p.fleet_types)}  {p.description}")
    for env in gpu_envs.ENVS:
        _echo(f"every profile runs --backend {env.backend} on the {env.name} environment (make {env.make_target}, "
              f"or --python-env bootstrap with {env.extra} in --pip-extras): {env.stack.describe()}")
    return 0


def cmd_package(args: argparse.Namespace) -> int:
    from emr.releases import require_line

    line = require_line(args.release_label)
    if args.dry_run:
        for item in packaging.planned(args.dist, with_env=not args.no_env, extras=args.extras, line=line):
            _echo(f"would build {item}")
        return 0
    built = packaging.build_all(L_REPO, args.dist, with_env=not args.no_env, extras=args.extras, line=line,
                                echo=_echo)
    for path in built:
        _echo(str(path))
    return 0


def _preflight_env(args: argparse.Namespace) -> tuple[str, Any]:
    """What preflight checks: the archive, or what the bootstrap action would install."""
    from emr import envinfo

    if args.python_env == "archive":
        what, read = str(args.env_archive), lambda: envinfo.load(args.env_archive)
    else:
        env = _bootstrap_env(args)
        env.check()
        what, read = f"the bootstrap environment (--pip-extras {env.extras})", env.info
    return what, None if args.dry_run else read()


def _preflight_report(args: argparse.Namespace, profile: Any, label: str, env: Any, manifest: Any) -> list[str]:
    """What preflight expects and what it checked, before its verdict."""
    from emr import gpu_envs, preflight
    from emr.releases import line_of

    stack = preflight.stack_of(env)
    line = line_of(label)
    release = f"{label} ({line.name}: Spark {line.spark})" if line else label
    libraries = ", ".join(f"{n} {env.distributions[n]}" for n in ("torch", "tensorrt-cu12", "tensorrt-cu13")
                          if n in env.distributions)
    backend = manifest.backend if manifest and args.backend == "auto" else args.backend
    expected = gpu_envs.for_backend(backend) or gpu_envs.FULL
    lines = [f"stack: {expected.stack.describe()} (emr/stacks.py; `make {expected.make_target}` and the bootstrap "
             "install it)"]
    if stack is None:
        lines.append("driver: not checked (the environment holds no CUDA stack)")
    elif args.driver_version:
        lines.append(f"driver: {args.driver_version} (--driver-version); the environment's CUDA "
                     f"{stack.cuda_major} stack needs R{stack.driver_min} or newer")
    else:
        lines.append(f"driver: not known here (pass --driver-version); the environment's CUDA {stack.cuda_major} "
                     f"stack needs R{stack.driver_min} or newer, and the gpu-driver-check bootstrap action checks "
                     "it on every node")
    lines.append(f"checked: release {release}, environment Python {env.python}"
                 f"{' with ' + libraries if libraries else ''}, backend {args.backend}, profile {profile.name} "
                 f"({profile.gpu}){', artifact ' + manifest.model_id if manifest else ''}")
    return lines


def cmd_preflight(args: argparse.Namespace) -> int:
    from emr import preflight
    from emr.profiles import get_profile
    from engines.errors import ArtifactError
    from engines.store import open_artifact

    profile = get_profile(args.profile)
    label = args.release_label or DEFAULT.default_label
    driver = preflight.Driver.parse(args.driver_version, "--driver-version") if args.driver_version else None
    what, env = _preflight_env(args)
    if args.dry_run:
        model = f", artifact {args.model}" if args.model else ""
        online = "; then ask the package indexes given for the stacks' pins" if args.online else ""
        _echo(f"would check {what}{model} (--backend {args.backend}) against profile "
              f"{profile.name} ({profile.instance_type}, {profile.gpu}), {label} and the NVIDIA driver{online}")
        return 0
    try:
        manifest = open_artifact(args.model, verify=False) if args.model else None  # the manifest, not the weights
    except ArtifactError as exc:
        raise EmrError(f"--model {args.model}: {exc}", exit_code=2) from exc
    for line in _preflight_report(args, profile, label, env, manifest):
        _echo(line)
    problems = preflight.check(profile, label, env, backend=args.backend, manifest=manifest, driver=driver)
    if args.online:
        from emr.stacks import INDEXES

        urls = {key: getattr(args, index.option[2:].replace("-", "_")) for key, index in INDEXES.items() if index.option}
        found, missing = preflight.online(urls)
        for line in found:
            _echo(f"online: {line}")
        problems += missing
    for problem in problems:
        _echo(f"problem: {problem}")
    if problems:
        return 1
    libraries = ", ".join(f"{n} {env.distributions[n]}" for n in ("torch", "tensorrt-cu12") if n in env.distributions)
    model = f", artifact {manifest.model_id} ({manifest.backend})" if manifest else ""
    _echo(f"preflight OK: profile {profile.name} ({profile.gpu}), {label}, Python {env.python} environment"
          f"{' with ' + libraries if libraries else ''}{model}")
    return 0


def cmd_stage(args: argparse.Namespace) -> int:
    from emr import staging

    clients = _clients(args)
    layout = L.Layout.at(args.prefix)
    model_dir = None
    if args.model and not args.model.startswith(("s3://", "s3a://", "s3n://")):
        model_dir = Path(args.model)
    plan = staging.plan_stage(layout, jobs_dir=args.jobs_dir, dist_dir=args.dist,
                              include_env=not args.no_env, model_dir=model_dir)
    if model_dir is not None and not args.force and not args.dry_run:  # a dry run reads nothing back
        staging.check_model_target(clients.s3, plan)

    def report(item: Any, result: Any) -> None:
        verb = "unchanged" if result.skipped else ("would upload" if args.dry_run else "uploaded")
        _echo(f"{verb:12} {item.what:28} {result.uri}  sha256={result.sha256[:12]} {result.size} B")

    staging.stage(clients.s3, plan, verify=not args.dry_run, report=report)
    if args.model and model_dir is None:
        manifest = staging.check_s3_artifact(clients.s3, args.model)
        _echo(f"checked      model {manifest.get('name')}@{manifest.get('version')}: "
              f"{len(manifest['files'])} files at {args.model}")
    elif model_dir is not None:
        manifest_target = [u for u in plan if u.what == "model manifest"][0].target
        _echo(f"model URI: {str(manifest_target).rsplit('/', 1)[0]}/")
    return 0


def cmd_create_cluster(args: argparse.Namespace) -> int:
    from emr import cluster, step_policy
    from emr.profiles import get_profile

    profile = get_profile(args.profile)
    settings = cluster.ClusterSettings(
        name=args.name, log_uri=args.log_uri, release_label=args.release_label,
        core_instance_count=args.core_count, subnet_ids=tuple(args.subnet_id), key_name=args.key_name,
        instance_profile=args.instance_profile, service_role=args.service_role,
        python_env=args.python_env, bootstrap_env=_bootstrap_env(args), idle_timeout_s=args.idle_timeout,
        fleet=args.fleet, spot_task_count=args.spot_task_count,
        cpu_core_type=args.cpu_core_type, gpu_task_count=args.gpu_task_count,
        tags=_conf(args.tag), extra_spark_defaults=_conf(args.conf),
    )
    layout = L.Layout.at(args.prefix)
    request = cluster.build_run_job_flow_request(profile, layout, settings)
    clients = _clients(args)
    if not args.no_role_check:
        for warning in cluster.check_roles(clients.iam, settings.instance_profile, settings.service_role):
            print(f"warning: {warning}", file=sys.stderr)
    gpu_env = None if args.dry_run or args.python_env != "archive" else step_policy.gpu_steps_refused(clients.s3, layout)
    if gpu_env:
        print(f"warning: {gpu_env}", file=sys.stderr)
    cluster_id = cluster.create_cluster(clients.emr, request)
    types = "/".join(profile.fleet_types) if settings.fleet else profile.instance_type
    nodes = f"{settings.core_count(profile)} x {settings.cpu_core_type or types}"
    if settings.gpu_task_count:
        nodes += f" + {settings.gpu_task_count} x {types} task"
    if settings.spot_task_count:
        nodes += f" + {settings.spot_task_count} Spot"
    _echo(f"cluster {cluster_id} ({profile.name}: {nodes}); logs under {args.log_uri}")
    if args.wait and not args.dry_run:
        cluster.wait_for_cluster(clients.emr, cluster_id, poll_s=args.poll, timeout_s=args.timeout, echo=_echo)
    print(cluster_id)
    return 0


def _wait_step(clients: Clients, cluster_id: str, step_id: str, cluster_info: dict[str, Any],
               args: argparse.Namespace) -> int:
    from emr import steps

    log_uri = cluster_info.get("LogUri")
    steps.wait_for_step(clients.emr, cluster_id, step_id, log_uri=log_uri, s3=clients.s3,
                        poll_s=args.poll, timeout_s=args.timeout, echo=_echo)  # raises unless COMPLETED
    folder = steps.step_log_folder(log_uri, cluster_id, step_id)
    _echo(f"step {step_id} COMPLETED; logs: {folder or 'no LogUri on the cluster'}")
    return 0


def _job_request(args: argparse.Namespace):
    from emr import steps

    return steps.JobRequest(args.job, args.input, args.output, args.model, args.run_date, tuple(args.job_flags),
                            cache_root=args.cache_root, runs_dir=args.runs_dir,
                            iceberg_warehouse=args.iceberg_warehouse)


def cmd_add_step(args: argparse.Namespace) -> int:
    from emr import cluster, step_policy, steps

    job = _job_request(args)
    layout = L.Layout.at(args.prefix)
    step = steps.build_step(layout, job, python_env=args.python_env, conf=_conf(args.conf),
                            action_on_failure=args.action_on_failure)
    clients = _clients(args)
    info = cluster.require_active(clients.emr, args.cluster_id)
    step_policy.require_staged(clients.s3, layout, job)
    python = (step_policy.staged_archive(clients.s3, layout) if args.python_env == "archive"
              else step_policy.cluster_bootstrap(clients.emr, args.cluster_id))
    if args.dry_run:  # a dry run reads nothing back
        line = step_policy.would_check(job, python.where)
        if line:
            _echo(line)
    else:
        step_policy.require_runnable(clients.s3, job, python)
    (step_id,) = steps.add_steps(clients.emr, args.cluster_id, [step])
    folder = steps.step_log_folder(info.get("LogUri"), args.cluster_id, step_id)
    _echo(f"step {step_id} added to {args.cluster_id}; logs: {folder or 'no LogUri on the cluster'}")
    if args.wait and not args.dry_run:
        _wait_step(clients, args.cluster_id, step_id, info, args)
    print(step_id)
    return 0


def cmd_wait(args: argparse.Namespace) -> int:
    from emr import cluster, steps

    clients = _clients(args)
    info = cluster.describe_cluster(clients.emr, args.cluster_id)
    if args.dry_run:  # one validated DescribeStep shows the request; polling a canned answer proves nothing
        steps.describe_step(clients.emr, args.cluster_id, args.step_id)
        _echo(_would_poll(f"step {args.step_id}", args))
        return 0
    return _wait_step(clients, args.cluster_id, args.step_id, info, args)


def _would_poll(what: str, args: argparse.Namespace) -> str:
    return f"would poll {what} every {args.poll:g}s until it ends (at most {args.timeout:g}s)"


def cmd_terminate(args: argparse.Namespace) -> int:
    from emr import cluster

    cluster.terminate(_clients(args).emr, args.cluster_id, force=args.force)
    _echo(f"cluster {args.cluster_id}: termination requested")
    return 0


def cmd_eks_submit(args: argparse.Namespace) -> int:
    from emr import eks, step_policy

    job = _job_request(args)
    layout = L.Layout.at(args.prefix)
    settings = eks.EksSettings(
        virtual_cluster_id=args.virtual_cluster_id, execution_role_arn=args.execution_role_arn,
        image=args.image, release_label=args.release_label, log_uri=args.log_uri,
        executor_instances=args.executors, instance_type=args.instance_type,
        executor_scheduler=args.executor_scheduler, extra_conf=_conf(args.conf),
    )
    request = eks.build_start_job_run_request(layout, job, settings, client_token=args.client_token)
    clients = _clients(args)
    step_policy.require_staged(clients.s3, layout, job, layout.eks(L.EXECUTOR_POD_TEMPLATE))
    run_id = eks.start_job_run(clients.emr_containers, request)
    folder = eks.job_run_log_folder(args.log_uri, args.virtual_cluster_id, run_id)
    _echo(f"job run {run_id} started on {args.virtual_cluster_id}; logs: {folder or 'no --log-uri'}")
    if args.wait and not args.dry_run:
        eks.wait_for_job_run(clients.emr_containers, args.virtual_cluster_id, run_id,
                             log_uri=args.log_uri, poll_s=args.poll, timeout_s=args.timeout, echo=_echo)
        _echo(f"job run {run_id} COMPLETED")
    print(run_id)
    return 0


def cmd_eks_wait(args: argparse.Namespace) -> int:
    from emr import eks

    client = _clients(args).emr_containers
    if args.dry_run:
        eks.describe_job_run(client, args.virtual_cluster_id, args.job_run_id)
        _echo(_would_poll(f"job run {args.job_run_id}", args))
        return 0
    eks.wait_for_job_run(client, args.virtual_cluster_id, args.job_run_id,
                         log_uri=args.log_uri, poll_s=args.poll, timeout_s=args.timeout, echo=_echo)
    _echo(f"job run {args.job_run_id} COMPLETED")
    return 0


_DRY_RUN_NOTE = "dry run: the requests above were validated and printed, none was sent (ids shown are placeholders)"
_DRY_RUN_NOTES = {"profiles": "dry run: profiles sends no requests", "package": "dry run: nothing was built",
                  "preflight": "dry run: nothing was read"}

COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "profiles": cmd_profiles,
    "package": cmd_package,
    "preflight": cmd_preflight,
    "stage": cmd_stage,
    "create-cluster": cmd_create_cluster,
    "add-step": cmd_add_step,
    "wait": cmd_wait,
    "terminate": cmd_terminate,
    "eks-submit": cmd_eks_submit,
    "eks-wait": cmd_eks_wait,
}


def main(argv: Sequence[str] | None = None) -> int:
    """Run one sub-command; print a one-line error (never only a traceback) on failure."""
    from botocore.exceptions import (BotoCoreError, ClientError, EndpointConnectionError,
                                     NoCredentialsError, NoRegionError, ParamValidationError,
                                     ProfileNotFound)

    args = build_parser().parse_args(argv)
    # A dry run's stdout is its requests, one JSON line each, so that `| jq` reads them; what it
    # says for people (would upload, cluster j-DRYRUN, the ids) goes to stderr, as the jobs do.
    args.requests_out = sys.stdout
    try:
        with contextlib.redirect_stdout(sys.stderr) if args.dry_run else contextlib.nullcontext():
            code = COMMANDS[args.command](args)
        if args.dry_run:
            print(_DRY_RUN_NOTES.get(args.command, _DRY_RUN_NOTE), file=sys.stderr)
        return code
    except EmrError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    except NoCredentialsError:
        print("error: no AWS credentials found (set AWS_PROFILE / --aws-profile, or the "
              "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY variables)", file=sys.stderr)
        return 1
    except NoRegionError:
        print("error: no AWS region configured (pass --region or set AWS_DEFAULT_REGION)", file=sys.stderr)
        return 2
    except ProfileNotFound as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except EndpointConnectionError as exc:
        print(f"error: cannot reach the AWS endpoint: {exc}", file=sys.stderr)
        return 1
    except ParamValidationError as exc:
        print(f"error: invalid request: {exc}", file=sys.stderr)
        return 2
    except ClientError as exc:
        error = exc.response.get("Error", {})
        print(f"error: {exc.operation_name} failed: {error.get('Code')}: {error.get('Message')}",
              file=sys.stderr)
        return 1
    except BotoCoreError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except (FileNotFoundError, PermissionError, IsADirectoryError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
