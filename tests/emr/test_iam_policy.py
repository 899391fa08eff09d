"""The IAM policies in emr/iam/ allow exactly the calls the code makes (issue #18).

CLI (emr/iam/cli-policy.json): every boto3 call in emr/*.py, found in the source by name (a
method of the s3, emr, emr-containers or iam client), mapped to the IAM actions it needs.
Airflow (emr/iam/airflow-policy.json, for the ``aws_default`` connection): the calls of the
Amazon provider's operators and sensors the DAGs in emr/airflow/ import (PROVIDER_CALLS, read
from provider 9.39's source, deferrable or not), and the checks they run with the hook's clients. A new call or operator fails here until the
policy and this table say what it needs.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from emr.cluster import DEFAULT_INSTANCE_PROFILE, DEFAULT_SERVICE_ROLE, MANAGED_POLICY_TAG

EMR_DIR = Path(__file__).resolve().parents[2] / "emr"
SERVICES = {"emr": "elasticmapreduce", "emr-containers": "emr-containers", "iam": "iam", "s3": "s3"}
# Operations whose IAM actions are not just "<service prefix>:<operation>".
NEEDS = {
    # Without s3:ListBucket, S3 answers a HEAD of a missing key with 403, not 404: a missing
    # staged file would read as "access denied".
    ("s3", "HeadObject"): {"s3:GetObject", "s3:ListBucket"},
    ("s3", "CreateMultipartUpload"): {"s3:PutObject"},
    ("s3", "UploadPart"): {"s3:PutObject"},
    ("s3", "CompleteMultipartUpload"): {"s3:PutObject"},
    ("emr", "RunJobFlow"): {"elasticmapreduce:RunJobFlow", "iam:PassRole"},  # both cluster roles
}
# Every operator and sensor also persists an EMR logs link: get_log_uri, a DescribeCluster.
PROVIDER_CALLS = {
    "EmrCreateJobFlowOperator": {("emr", "RunJobFlow"), ("emr", "DescribeCluster")},
    "EmrAddStepsOperator": {("emr", "AddJobFlowSteps"), ("emr", "DescribeCluster")},
    "EmrStepSensor": {("emr", "DescribeStep"), ("emr", "DescribeCluster")},
    "EmrTerminateJobFlowOperator": {("emr", "TerminateJobFlows"), ("emr", "DescribeCluster")},
    "EmrContainerOperator": {("emr-containers", "StartJobRun"), ("emr-containers", "DescribeJobRun")},
    "EmrContainerSensor": {("emr-containers", "DescribeJobRun")},
    # The clients the DAGs hand to emr/step_policy.py's checks: staged files and the environment's
    # and the artifact's manifests read (HeadObject, GetObject), a cluster's bootstrap actions listed.
    "AwsBaseHook": {("s3", "HeadObject"), ("s3", "GetObject"), ("emr", "ListBootstrapActions")},
}


def _client_methods() -> dict[str, list[tuple[str, str]]]:
    """boto3 method name -> the (service, operation) pairs it names, for the four services."""
    import botocore.session
    from botocore import xform_name

    session = botocore.session.get_session()
    out: dict[str, list[tuple[str, str]]] = {}
    for service in SERVICES:
        for operation in session.get_service_model(service).operation_names:
            out.setdefault(xform_name(operation), []).append((service, operation))
    return out


def _called_names(path: Path) -> set[str]:
    return {node.func.attr for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)}


def cli_operations() -> set[tuple[str, str]]:
    methods, found = _client_methods(), set()
    for path in sorted(EMR_DIR.glob("*.py")):
        for name in _called_names(path) & methods.keys():
            assert len(methods[name]) == 1, f"{path.name}: {name}() is an operation of {methods[name]}; " \
                                            "give the client a name this test can tell apart"
            found |= set(methods[name])
    return found


def airflow_operations() -> set[tuple[str, str]]:
    found = set()
    for path in sorted((EMR_DIR / "airflow").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("airflow.providers.amazon"):
                for alias in node.names:
                    assert alias.name in PROVIDER_CALLS, \
                        f"{path.name} uses {alias.name}: add its AWS calls to PROVIDER_CALLS and the policy"
                    found |= PROVIDER_CALLS[alias.name]
    return found


def actions(operations: set[tuple[str, str]]) -> set[str]:
    return {a for op in operations for a in NEEDS.get(op, {f"{SERVICES[op[0]]}:{op[1]}"})}


def policy(name: str) -> dict:
    return json.loads((EMR_DIR / "iam" / name).read_text())


def allowed(document: dict) -> set[str]:
    out = set()
    for statement in document["Statement"]:
        assert statement["Effect"] == "Allow"
        action = statement["Action"]
        out |= {action} if isinstance(action, str) else set(action)
    return out


def test_the_cli_calls_what_this_test_expects() -> None:
    """A guard on the AST scan itself: the calls named in emr/README.md 'IAM' are all found."""
    found = cli_operations()
    for op in [("emr", "RunJobFlow"), ("emr", "AddJobFlowSteps"), ("emr", "DescribeCluster"),
               ("emr", "DescribeStep"), ("emr", "TerminateJobFlows"), ("iam", "GetRole"),
               ("iam", "GetInstanceProfile"), ("emr-containers", "StartJobRun"),
               ("emr-containers", "DescribeJobRun"), ("s3", "PutObject"), ("s3", "HeadObject")]:
        assert op in found


@pytest.mark.parametrize("name, operations", [("cli-policy.json", cli_operations),
                                              ("airflow-policy.json", airflow_operations)])
def test_policy_allows_exactly_the_calls_made(name: str, operations) -> None:
    want, have = actions(operations()), allowed(policy(name))
    assert not want - have, f"emr/iam/{name} lacks {sorted(want - have)}"
    assert not have - want, f"emr/iam/{name} allows {sorted(have - want)}, which the code never needs"


@pytest.mark.parametrize("name", ["cli-policy.json", "airflow-policy.json"])
def test_policy_passes_only_the_default_roles_and_creates_only_tagged_clusters(name: str) -> None:
    statements = policy(name)["Statement"]
    passed = {s["Resource"].rsplit("/", 1)[1]: s["Condition"]["StringLike"]["iam:PassedToService"]
              for s in statements if s["Action"] == "iam:PassRole"}
    assert passed == {DEFAULT_SERVICE_ROLE: "elasticmapreduce.amazonaws.com*",
                      DEFAULT_INSTANCE_PROFILE: "ec2.amazonaws.com*"}
    (create,) = [s for s in statements if s["Action"] == "elasticmapreduce:RunJobFlow"]
    key, value = MANAGED_POLICY_TAG
    assert create["Condition"] == {"StringEquals": {f"aws:RequestTag/{key}": value}}
