import json

import pytest

from engines import artifact, store
from engines.errors import ArtifactError


def _manifest(**over):
    base = dict(name="m", version="1", task="pair-classification", backend="onnx", max_seq_len=64,
                buckets=((64, 32), (32, 64)), files={}, labels=("no", "yes"), positive_label=1)
    base.update(over)
    return artifact.Manifest(**base)


def test_manifest_round_trips_through_json(tmp_path):
    m = _manifest(files={"model.onnx": "ab" * 32})
    artifact.write_manifest(tmp_path, m)
    back = artifact.read_manifest(tmp_path)
    assert back == m
    assert back.digest == m.digest
    assert json.loads((tmp_path / "manifest.json").read_text())["buckets"] == [[64, 32], [32, 64]]


def test_digest_changes_with_any_file_hash():
    assert _manifest(files={"a": "0" * 64}).digest != _manifest(files={"a": "1" * 64}).digest


@pytest.mark.parametrize("over, message", [
    ({"task": "regression"}, "task 'regression'"),
    ({"labels": ()}, "needs labels"),
    ({"max_seq_len": 4}, "max_seq_len must be >= 8"),
])
def test_manifest_rejects_bad_fields(over, message):
    with pytest.raises(ArtifactError, match=message):
        _manifest(**over)


def test_opening_checks_the_backend_against_the_engines_and_renames_old_ones(tmp_path):
    """The Manifest is plain data; opening an artifact asks the registry about its backend."""
    artifact.write_manifest(tmp_path, _manifest(backend="tflite"))
    with pytest.raises(ArtifactError, match="manifest backend 'tflite' is not one of"):
        store.open_artifact(tmp_path)
    artifact.write_manifest(tmp_path, _manifest(backend="torchscript"))  # torch's name before the rename
    assert store.open_artifact(tmp_path).backend == "torch" and artifact.read_manifest(tmp_path).backend == "torchscript"


def test_embedding_needs_no_labels():
    assert _manifest(task="embedding", labels=()).labels == ()


def test_verify_names_changed_and_missing_files(tmp_path):
    (tmp_path / "model.onnx").write_bytes(b"weights")
    (tmp_path / "tok.json").write_text("{}")
    m = _manifest(files={"model.onnx": artifact.sha256_file(tmp_path / "model.onnx"),
                         "tok.json": artifact.sha256_file(tmp_path / "tok.json"), "gone.bin": "0" * 64})
    artifact.write_manifest(tmp_path, m)
    (tmp_path / "model.onnx").write_bytes(b"weightz")
    with pytest.raises(ArtifactError) as err:
        store.open_artifact(tmp_path)
    assert "model.onnx: sha256" in str(err.value) and "gone.bin: missing" in str(err.value)
    assert "tok.json" not in str(err.value)


def test_missing_manifest_and_wrong_format_version(tmp_path):
    with pytest.raises(ArtifactError, match="manifest.json not found"):
        store.open_artifact(tmp_path)
    d = _manifest().to_dict() | {"format_version": 99}
    (tmp_path / "manifest.json").write_text(json.dumps(d))
    with pytest.raises(ArtifactError, match="format_version 99 is not supported"):
        store.open_artifact(tmp_path)


def test_a_manifest_with_a_field_of_the_wrong_type_is_an_artifact_error(tmp_path):
    d = _manifest().to_dict() | {"max_seq_len": "long"}
    (tmp_path / "manifest.json").write_text(json.dumps(d))
    with pytest.raises(ArtifactError, match="manifest.json has a malformed field"):
        store.open_artifact(tmp_path)
