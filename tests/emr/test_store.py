"""engines.store against a local moto S3: URI parsing, the driver's manifest check, cache, checksums, locking, errors."""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import sys
from pathlib import Path

import pytest

from engines.errors import ArtifactError
from engines.store import localize, open_manifest
from tests import moto_support

BUCKET = "models"
PREFIX = "minilm-dup/1.0/"
FILES = {
    "model.onnx": b"\x08\x07onnx-bytes" * 1000,
    "tokenizer/tokenizer.json": b'{"version": "1.0", "model": {}}',
}


def _manifest(files: dict[str, bytes], **overrides) -> bytes:
    manifest = {
        "format_version": 1, "name": "minilm-dup", "version": "1.0", "task": "pair-classification",
        "backend": "onnx",
        "files": {rel: hashlib.sha256(data).hexdigest() for rel, data in files.items()},
    }
    manifest.update(overrides)
    return json.dumps(manifest, sort_keys=True).encode()


def _publish(s3, files=FILES, manifest: bytes | None = None, bucket=BUCKET, prefix=PREFIX) -> str:
    s3.create_bucket(Bucket=bucket)
    for rel, data in files.items():
        s3.put_object(Bucket=bucket, Key=prefix + rel, Body=data)
    s3.put_object(Bucket=bucket, Key=prefix + "manifest.json", Body=manifest or _manifest(files))
    return f"s3://{bucket}/{prefix}"


def test_local_paths_are_returned_unchanged(tmp_path: Path) -> None:
    artifact = tmp_path / "artifact"
    artifact.mkdir()
    assert localize(str(artifact)) == artifact
    assert localize(artifact) == artifact
    assert localize(f"file://{artifact}") == artifact
    assert list(tmp_path.iterdir()) == [artifact]  # nothing copied anywhere near it


def test_file_uris_are_percent_decoded(tmp_path: Path) -> None:
    artifact = tmp_path / "my model#1"
    artifact.mkdir()
    assert localize("file://" + str(artifact).replace(" ", "%20").replace("#", "%23")) == artifact
    with pytest.raises(ArtifactError, match="names host 'models'"):
        localize("file://models/minilm")  # a relative path mistaken for a URI


@pytest.mark.parametrize("uri", ["gs://bucket/model/", "hdfs:///models/minilm"])
def test_unknown_scheme_is_rejected(uri: str) -> None:
    with pytest.raises(ArtifactError, match=f"unsupported scheme '{uri.split(':')[0]}://'"):
        localize(uri)
    with pytest.raises(ArtifactError, match="unsupported scheme"):
        open_manifest(uri)


def test_missing_boto3_is_an_artifact_error(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "boto3", None)  # import boto3 now raises ImportError
    with pytest.raises(ArtifactError, match=r"needs boto3: the aws extra"):
        open_manifest(f"s3://{BUCKET}/{PREFIX}")


def test_driver_reads_only_the_manifest_of_an_s3_artifact(s3, aws, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("ACCEL_SCORING_CACHE", str(tmp_path / "cache"))
    manifest = _manifest(FILES, max_seq_len=128, labels=["different", "duplicate"])
    aws.recorder.clear()
    assert open_manifest(_publish(s3, manifest=manifest)).model_id == "minilm-dup@1.0"
    gets = [path for method, path in aws.recorder.requests if method == "GET"]
    assert gets == [f"/{BUCKET}/{PREFIX}manifest.json"]
    assert not (tmp_path / "cache").exists()  # nothing downloaded


def test_s3_artifact_is_downloaded_verified_and_keyed_by_manifest(s3, aws, tmp_path: Path) -> None:
    uri = _publish(s3)
    path = localize(uri, tmp_path)
    manifest = _manifest(FILES)
    assert path == tmp_path / hashlib.sha256(manifest).hexdigest()
    assert (path / "manifest.json").read_bytes() == manifest
    for rel, data in FILES.items():
        assert (path / rel).read_bytes() == data
    assert [p.name for p in tmp_path.iterdir() if p.is_dir()] == [path.name]  # no temp dirs left


def test_second_call_reuses_the_cache(s3, aws, tmp_path: Path) -> None:
    uri = _publish(s3)
    first = localize(uri, tmp_path)
    second = localize(uri.rstrip("/"), tmp_path)  # with or without the trailing slash
    assert first == second
    assert aws.recorder.count("GET", PREFIX + "model.onnx") == 1
    assert aws.recorder.count("GET", PREFIX + "manifest.json") == 2


def test_new_manifest_under_same_prefix_gives_new_entry(s3, aws, tmp_path: Path) -> None:
    uri = _publish(s3)
    old = localize(uri, tmp_path)
    changed = {**FILES, "model.onnx": b"retrained"}
    _publish(s3, changed)
    new = localize(uri, tmp_path)
    assert new != old and (new / "model.onnx").read_bytes() == b"retrained"


def test_cache_dir_defaults_to_environment(s3, aws, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("ACCEL_SCORING_CACHE", str(tmp_path / "from-env"))
    path = localize(_publish(s3))
    assert path.parent == tmp_path / "from-env"


def test_concurrent_processes_download_once(s3, aws, tmp_path: Path) -> None:
    uri = _publish(s3)
    # Every GET of the model takes 0.5 s, so without the lock all workers would be downloading
    # at the same time and the count below would be the number of workers.
    aws.recorder.delays[PREFIX + "model.onnx"] = 0.5
    ctx = multiprocessing.get_context("spawn")
    workers = 4
    barrier, results = ctx.Barrier(workers), ctx.Queue()
    from tests.emr.store_worker import localize_after_barrier

    procs = [ctx.Process(target=localize_after_barrier, args=(uri, str(tmp_path), barrier, results))
             for _ in range(workers)]
    for p in procs:
        p.start()
    outcomes = [results.get(timeout=60) for _ in procs]
    for p in procs:
        p.join(timeout=30)
    assert [status for status, _ in outcomes] == ["ok"] * workers, outcomes
    assert len({path for _, path in outcomes}) == 1
    assert aws.recorder.count("GET", PREFIX + "model.onnx") == 1
    assert aws.recorder.count("GET", PREFIX + "tokenizer/tokenizer.json") == 1
    assert aws.recorder.count("GET", PREFIX + "manifest.json") == workers


def test_sha_mismatch_names_the_file_and_caches_nothing(s3, aws, tmp_path: Path) -> None:
    manifest = _manifest({**FILES, "tokenizer/tokenizer.json": b"something else"})
    uri = _publish(s3, manifest=manifest)
    with pytest.raises(ArtifactError, match=r"sha256 mismatch for 'tokenizer/tokenizer.json'"):
        localize(uri, tmp_path)
    assert [p for p in tmp_path.iterdir() if p.is_dir()] == []  # temp dir removed, no entry


def test_leftover_temp_dir_of_a_dead_process_is_removed(s3, aws, tmp_path: Path) -> None:
    uri = _publish(s3)
    key = hashlib.sha256(_manifest(FILES)).hexdigest()
    leftover = tmp_path / f".{key}.tmp-crashed"
    (leftover / "tokenizer").mkdir(parents=True)
    path = localize(uri, tmp_path)
    assert not leftover.exists() and path.is_dir()


@pytest.mark.parametrize(
    "setup, message",
    [
        (lambda s3: s3.create_bucket(Bucket=BUCKET), r"manifest\.json does not exist: not an artifact"),
        (lambda s3: _publish(s3, manifest=_manifest({**FILES, "extra.bin": b"x"})),
         r"minilm-dup/1\.0/extra\.bin does not exist: s3://models/minilm-dup/1\.0/manifest\.json lists it"),
        (lambda s3: _publish(s3, manifest=b"{not json"), r"not valid JSON"),
        (lambda s3: _publish(s3, manifest=json.dumps({"files": {"../evil": "0" * 64}}).encode()),
         r"unsafe file path '\.\./evil'"),
        (lambda s3: None, r"bucket 'models' does not exist"),
    ],
    ids=["no-manifest", "missing-file", "bad-json", "unsafe-path", "no-bucket"],
)
def test_unreadable_artifacts_raise_clear_errors(s3, aws, tmp_path, setup, message) -> None:
    setup(s3)
    with pytest.raises(ArtifactError, match=message):
        localize(f"s3://{BUCKET}/{PREFIX}", tmp_path)


def test_bucket_of_another_account_is_access_denied(aws, tmp_path, monkeypatch) -> None:
    foreign = moto_support.foreign_s3_client(aws.url)
    _publish(foreign, bucket="their-models")
    monkeypatch.setenv("MOTO_S3_ALLOW_CROSSACCOUNT_ACCESS", "false")  # read by the in-process server
    with pytest.raises(ArtifactError, match="access denied reading s3://their-models/.*another account"):
        localize(f"s3://their-models/{PREFIX}", tmp_path)


def test_an_artifact_downloads_intact_through_throttling_resets_and_cut_bodies(s3, aws, tmp_path, monkeypatch) -> None:
    """local_aws/s3_faults.py on 30% of the requests: botocore's standard retries absorb 503, 500
    and dropped connections, s3transfer fetches a body that broke off again, and the retries are
    counted for the run summary."""
    from engines import store
    from local_aws.s3_faults import Rule

    files = {**FILES, "model.onnx": bytes(range(256)) * 40_000}  # 10 MB: s3transfer's ranged, parallel GETs
    uri = _publish(s3, files=files, manifest=_manifest(files, max_seq_len=128, labels=["different", "duplicate"]))
    monkeypatch.setitem(store._RETRIES, "max_attempts", 8)  # 30% is six times a bad night's share
    before = store.s3_retries()
    with aws.faults.injecting(Rule(0.3), seed=3) as faults:
        paths = [localize(uri, tmp_path / f"node-{n}") for n in range(4)]  # four nodes, four downloads
        manifest = open_manifest(uri)
    assert manifest.task == "pair-classification"
    assert all((path / "model.onnx").read_bytes() == files["model.onnx"] for path in paths)
    assert {kind for kind, _ in faults.counts} >= {"slowdown", "internal", "reset", "truncate"}, faults.counts
    assert 0 < store.s3_retries() - before <= faults.injected()


def test_a_key_that_always_fails_is_named_and_nothing_is_cached(s3, aws, tmp_path) -> None:
    from local_aws.s3_faults import Rule

    uri = _publish(s3)
    with aws.faults.injecting(Rule(1.0, ("internal",), key=r"/tokenizer\.json$")) as faults, \
            pytest.raises(ArtifactError, match=r"^cannot read s3://models/minilm-dup/1\.0/tokenizer/tokenizer\.json: "
                                               r"An error occurred \(500\) when calling the HeadObject operation \(reached max retries: 5\)"):
        localize(uri, tmp_path)
    assert faults.injected() == 6  # the first attempt and botocore's 5 retries
    assert [p for p in tmp_path.iterdir() if p.is_dir()] == []
