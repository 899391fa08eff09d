"""Stage what a run needs under an S3 prefix: jobs, package, environment, scripts, a model.

``plan_stage`` decides what goes where from local files (pure, no AWS); ``stage`` uploads the
plan with ``emr.s3.upload`` (checksummed, skipping objects already there with the same sha256).
A model given as ``s3://`` is not copied: ``check_s3_artifact`` only proves its manifest and
every listed file can be read.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable

from emr import gpu_envs
from emr import layout as L
from emr.errors import EmrError
from emr.s3 import SHA256_METADATA, S3Uri, UploadResult, head, read_bytes, require_object, upload
from engines.artifact import sha256_file

EMR_DIR = Path(__file__).resolve().parent
REPO_ROOT = EMR_DIR.parent
SCRIPTS = (L.CGROUP_BOOTSTRAP, L.CACHE_DIR_BOOTSTRAP, L.INSTALL_ENV_BOOTSTRAP, L.NEURON_DISCOVERY,
           L.GPU_DISCOVERY)
POD_TEMPLATES = (L.EXECUTOR_POD_TEMPLATE, L.DRIVER_POD_TEMPLATE)


@dataclass(frozen=True)
class Upload:
    source: Path
    target: S3Uri
    what: str


def plan_stage(
    layout: L.Layout,
    *,
    jobs_dir: Path,
    dist_dir: Path,
    jobs: Iterable[str] = L.JOBS,
    include_env: bool = True,
    model_dir: Path | None = None,
) -> list[Upload]:
    """List the uploads for a staging run; raise ``EmrError`` (exit 2) naming missing files."""
    plan: list[Upload] = []
    missing: list[str] = []

    def add(source: Path, target: S3Uri, what: str, fix: str) -> None:
        if source.is_file():
            plan.append(Upload(source, target, what))
        else:
            missing.append(f"{source} ({fix})")

    for job in jobs:
        if job not in L.JOBS:
            raise EmrError(f"unknown job {job!r}; expected one of {', '.join(L.JOBS)}", exit_code=2)
        add(jobs_dir / f"{job}.py", layout.job(job), f"job {job}", "the job's entry point")
    add(dist_dir / L.PYFILES_ZIP, layout.pyfiles, "py-files zip", "run `make package`")
    wheels = sorted(dist_dir.glob("accel_scoring-*.whl"))
    if wheels:
        plan.append(Upload(wheels[-1], layout.wheel(wheels[-1].name), "wheel"))
    else:
        missing.append(f"{dist_dir}/accel_scoring-*.whl (run `make package`)")
    if include_env:
        add(dist_dir / L.ENV_ARCHIVE, layout.env_archive, "environment archive",
            "run `make package`, or pass --no-env when the cluster installs it by bootstrap")
        manifest = dist_dir / L.ENV_MANIFEST
        if manifest.is_file():  # after the archive: add-step checks it against the staged one
            plan.append(Upload(manifest, layout.env_manifest, "environment manifest"))
    for name in SCRIPTS:
        add(EMR_DIR / "scripts" / name, layout.script(name), f"script {name}", "part of emr/")
    # The pins `make package-gpu` and `make package-gpu-torch` install, for the bootstrap environment.
    for env in gpu_envs.ENVS:
        add(dist_dir / env.requirements, layout.script(env.requirements), f"{env.name} requirements",
            "run `make package`")
    for name in POD_TEMPLATES:
        add(EMR_DIR / "k8s" / name, layout.eks(name), f"pod template {name}", "part of emr/")
    if model_dir is not None:
        plan.extend(plan_model(layout, model_dir))
    if missing:
        raise EmrError("cannot stage, missing: " + "; ".join(missing), exit_code=2)
    return plan


def plan_model(layout: L.Layout, model_dir: Path) -> list[Upload]:
    """Uploads for a local artifact folder: every file its manifest lists, then the manifest."""
    manifest_path = model_dir / "manifest.json"
    try:
        manifest = json.loads(manifest_path.read_text())
    except FileNotFoundError:
        raise EmrError(f"{model_dir} is not a model artifact: no manifest.json", exit_code=2) from None
    except (OSError, ValueError) as exc:
        raise EmrError(f"cannot read {manifest_path}: {exc}", exit_code=2) from exc
    files = manifest.get("files") if isinstance(manifest, dict) else None
    if not isinstance(files, dict) or not files:
        raise EmrError(f"{manifest_path} has no 'files' mapping", exit_code=2)
    name = str(manifest.get("name") or model_dir.name)
    version = str(manifest.get("version") or "0")
    target = layout.model(name, version)
    uploads = []
    for rel in sorted(files):
        source = model_dir / rel
        if not source.is_file():
            raise EmrError(f"{manifest_path} lists {rel!r}, which is not in {model_dir}", exit_code=2)
        uploads.append(Upload(source, target.join(rel), f"model file {rel}"))
    # The manifest goes last: a reader that finds it finds every file it lists.
    uploads.append(Upload(manifest_path, target.join("manifest.json"), "model manifest"))
    return uploads


def check_model_target(client: Any, plan: list[Upload]) -> None:
    """Refuse (EmrError, exit 2) to stage a model over another artifact of the same name and
    version: every output row records that name@version, and jobs running with it check its
    digest, so replacing it changes what past rows mean and fails those jobs mid-run."""
    (manifest,) = [u for u in plan if u.what == "model manifest"]
    found = head(client, manifest.target)
    if found is None or found.get("Metadata", {}).get(SHA256_METADATA) == sha256_file(manifest.source):
        return
    folder = str(manifest.target).rsplit("/", 1)[0] + "/"
    raise EmrError(f"{folder} already holds another artifact (its manifest.json differs from {manifest.source}): "
                   f"a name and version name one artifact; compile this one with another --name or --version, "
                   f"or pass --force to replace it", exit_code=2)


def stage(
    client: Any,
    plan: list[Upload],
    *,
    verify: bool = True,
    report: Callable[[Upload, UploadResult], None] = lambda u, r: None,
) -> list[UploadResult]:
    """Upload every item of ``plan``; ``report`` is called after each one."""
    results = []
    for item in plan:
        result = upload(client, item.source, item.target, verify=verify)
        report(item, result)
        results.append(result)
    return results


def check_s3_artifact(client: Any, uri: str) -> dict[str, Any]:
    """Prove an artifact on S3 is complete: its manifest parses and every listed file exists."""
    prefix = S3Uri.parse(uri).as_prefix()
    raw = read_bytes(client, prefix.join("manifest.json"))
    try:
        manifest = json.loads(raw)
        files = manifest["files"]
        assert isinstance(files, dict) and files
    except (ValueError, KeyError, TypeError, AssertionError):
        raise EmrError(f"{prefix}manifest.json has no valid 'files' mapping") from None
    for rel in sorted(files):
        require_object(client, prefix.join(rel), hint=f"listed in {prefix}manifest.json")
    return manifest
