"""deploy/kubernetes: every manifest lints (yamllint, strict), validates offline (built-in kinds
against the Kubernetes 1.37 schemas bundled in kubernetes-validate, strict; the CRD kinds against
crd_schemas.py), and says what the server does (probes on /health and /ready, a grace period that
covers preStop + --shutdown-timeout, the HPA's metric as prometheus-adapter names it, the images
Dockerfile and Dockerfile.cuda build, run as their USER). The CPU Deployment's command line then
starts a real `locr serve` (tiny model swapped in)."""
import re
import subprocess
import sys

import jsonschema
import kubernetes_validate
import pytest
import requests
import yaml

from conftest import DEPLOY, MODEL, Server
from crd_schemas import SCHEMAS

K8S = DEPLOY / "kubernetes"
K8S_VERSION = "1.37.0"


def manifests():
    files = sorted(K8S.glob("*.yaml"))
    assert files, "no manifest under deploy/kubernetes"
    return files


def documents():
    out = []
    for path in manifests():
        for doc in yaml.safe_load_all(path.read_text()):
            if doc is not None:
                out.append((path.name, doc))
    return out


def by_kind(kind):
    return [doc for _, doc in documents() if doc["kind"] == kind]


def container(deployment):
    (c,) = deployment["spec"]["template"]["spec"]["containers"]
    return c


def flag(c, name):
    """The value of --name=value in the container's args (None if absent, '' for a bare flag)."""
    for a in c["args"]:
        if a == name:
            return ""
        if a.startswith(name + "="):
            return a.split("=", 1)[1]
    return None


def test_yamllint_strict():
    r = subprocess.run([sys.executable, "-m", "yamllint", "-s", "-c", str(DEPLOY / ".yamllint.yaml"), str(K8S)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_every_document_validates():
    seen = set()
    for name, doc in documents():
        key = (doc.get("apiVersion"), doc.get("kind"))
        seen.add(key[1])
        if key in SCHEMAS:
            jsonschema.validate(doc, SCHEMAS[key])
            with pytest.raises(kubernetes_validate.SchemaNotFoundError):
                kubernetes_validate.validate(doc, K8S_VERSION, strict=True)
        else:
            try:
                kubernetes_validate.validate(doc, K8S_VERSION, strict=True)
            except kubernetes_validate.ValidationError as e:
                pytest.fail(f"{name}: {doc['kind']} {doc['metadata']['name']}: {e.message} at {list(e.path)}")
    assert {"Deployment", "Service", "PersistentVolumeClaim", "HorizontalPodAutoscaler", "PodMonitor",
            "InferencePool", "ConfigMap"} <= seen


def test_validation_catches_a_bad_field():
    """The checks above can fail: a misplaced field and a wrong type are refused by both paths."""
    (dep, *_) = by_kind("Deployment")
    dep["spec"]["template"]["spec"]["containers"][0]["readinessProbe"]["httpGet"]["port"] = [8000]
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(dep, K8S_VERSION, strict=True)
    (pool,) = by_kind("InferencePool")
    pool["spec"]["targetPort"] = pool["spec"].pop("targetPorts")
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(pool, SCHEMAS[("inference.networking.k8s.io/v1", "InferencePool")])


def test_probes_drain_and_devices():
    deps = {d["metadata"]["name"]: d for d in by_kind("Deployment")}
    assert set(deps) == {"locr-cpu", "locr-gpu"}
    for name, d in deps.items():
        pod = d["spec"]["template"]["spec"]
        c = container(d)
        assert c["command"][:2] == ["locr", "serve"]
        assert c["livenessProbe"]["httpGet"]["path"] == "/health"
        assert c["startupProbe"]["httpGet"]["path"] == "/health"
        assert c["readinessProbe"]["httpGet"]["path"] == "/ready"
        pre_stop = c["lifecycle"]["preStop"]["sleep"]["seconds"]
        shutdown = int(flag(c, "--shutdown-timeout"))
        assert pod["terminationGracePeriodSeconds"] >= pre_stop + shutdown, name
        assert pod["terminationGracePeriodSeconds"] <= pre_stop + shutdown + 15, name
        assert c["resources"]["requests"]["cpu"] and c["resources"]["requests"]["memory"]
        assert c["resources"]["limits"]["memory"]
        gpus = c["resources"]["limits"].get("nvidia.com/gpu")
        if name == "locr-gpu":
            assert gpus == 1 and flag(c, "--device") == "cuda"
        else:
            assert gpus is None and flag(c, "--device") in (None, "cpu")
    (svc,) = by_kind("Service")
    for d in deps.values():
        labels = d["spec"]["template"]["metadata"]["labels"]
        assert svc["spec"]["selector"].items() <= labels.items()
        assert d["spec"]["selector"]["matchLabels"].items() <= labels.items()
    (pool,) = by_kind("InferencePool")
    assert pool["spec"]["targetPorts"] == [{"number": 8000}]


def test_deployments_run_the_repository_images():
    """The CPU Deployment runs the image Dockerfile builds (locr:cpu), the GPU one Dockerfile.cuda's
    (locr:cuda): entrypoint `locr serve` (what `command` repeats), port 8000, and the pods' uid/gid
    the image's USER. (scripts/test-image.sh builds and runs the CPU image itself.)"""
    deps = {d["metadata"]["name"]: d for d in by_kind("Deployment")}
    for name, dockerfile, tag in (("locr-cpu", "Dockerfile", "locr:cpu"), ("locr-gpu", "Dockerfile.cuda", "locr:cuda")):
        text = (DEPLOY.parent / dockerfile).read_text()
        c = container(deps[name])
        assert c["image"] == tag and f" -t {tag} ." in text, (name, c["image"])
        assert 'ENTRYPOINT ["locr", "serve"]' in text and c["command"][:2] == ["locr", "serve"]
        assert re.search(r"^EXPOSE 8000$", text, re.M) and c["ports"][0]["containerPort"] == 8000
        user = re.search(r"^USER (\d+):(\d+)$", text, re.M)
        sc = deps[name]["spec"]["template"]["spec"]["securityContext"]
        assert sc["runAsNonRoot"] and (sc["runAsUser"], sc["runAsGroup"]) == (int(user[1]), int(user[2]))


def test_hpa_metric_is_what_the_adapter_exposes():
    (hpa,) = by_kind("HorizontalPodAutoscaler")
    (metric,) = hpa["spec"]["metrics"]
    assert metric["type"] == "Pods"
    (cm,) = by_kind("ConfigMap")
    (rule,) = yaml.safe_load(cm["data"]["config.yaml"])["rules"]
    series = "vllm:num_requests_waiting"
    assert re.search(rule["seriesQuery"].split("=~\"")[1].split("\"")[0], series)
    exposed = re.sub(rule["name"]["matches"], rule["name"]["as"].replace("${1}", r"\1"), series)
    assert metric["pods"]["metric"]["name"] == exposed == "vllm_num_requests_waiting"
    assert hpa["spec"]["scaleTargetRef"]["name"] in {d["metadata"]["name"] for d in by_kind("Deployment")}


def test_cpu_deployment_command_line_serves():
    """The CPU container's arguments, as written, start `locr serve` (model: tiny fixture; listen:
    loopback, a free port), which then answers /ready, /health and the metric the HPA reads."""
    (dep,) = [d for d in by_kind("Deployment") if d["metadata"]["name"] == "locr-cpu"]
    args = [a for a in container(dep)["args"] if not a.startswith(("--host=", "--port="))]
    s = Server(*args, "--host", "127.0.0.1", "--port", "0", model=MODEL)
    try:
        assert requests.get(s.url + "/ready", timeout=10).status_code == 200
        assert requests.get(s.url + "/health", timeout=10).status_code == 200
        assert "vllm:num_requests_waiting" in s.metrics()
        assert requests.get(s.url + "/v1/models", timeout=10).json()["data"][0]["id"] == "lightonocr-2-1b"
    finally:
        assert s.stop() == 0, s.log
