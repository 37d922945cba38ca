"""JSON schemas of the custom resources in deploy/kubernetes that kubernetes-validate does not
bundle (it holds the built-in APIs only). Written down from the public CRD definitions, narrowed
to the fields these manifests may use: every object is closed (additionalProperties: false), so a
misspelt or misplaced field fails as it would against the CRD's structural schema.

- InferencePool inference.networking.k8s.io/v1 (Gateway API Inference Extension v1:
  spec.selector.matchLabels, spec.targetPorts[].number (1..8 ports), spec.appProtocol,
  spec.endpointPickerRef {group, kind, name, port.number, failureMode FailOpen|FailClose}).
- HTTPRoute gateway.networking.k8s.io/v1 (parentRefs, rules[].matches/backendRefs/timeouts).
- PodMonitor / ServiceMonitor monitoring.coreos.com/v1 (Prometheus Operator: selector,
  podMetricsEndpoints[] / endpoints[] with port, path, interval, scrapeTimeout, scheme).
"""

_NAME = {"type": "string", "minLength": 1, "maxLength": 253}
_PORT = {"type": "integer", "minimum": 1, "maximum": 65535}
_LABELS = {"type": "object", "additionalProperties": {"type": "string", "maxLength": 63,
                                                      "pattern": r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$"}}
_DURATION = {"type": "string", "pattern": r"^(0|(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$"}
_METADATA = {"type": "object", "required": ["name"],
             "properties": {"name": {"type": "string", "pattern": r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"},
                            "namespace": {"type": "string"}, "labels": _LABELS, "annotations": {"type": "object"}},
             "additionalProperties": False}
_SELECTOR = {"type": "object", "required": ["matchLabels"], "properties": {"matchLabels": _LABELS},
             "additionalProperties": False}


def _resource(api_version, kind, spec):
    return {"type": "object", "required": ["apiVersion", "kind", "metadata", "spec"],
            "properties": {"apiVersion": {"const": api_version}, "kind": {"const": kind},
                           "metadata": _METADATA, "spec": spec},
            "additionalProperties": False}


INFERENCE_POOL = _resource("inference.networking.k8s.io/v1", "InferencePool", {
    "type": "object", "required": ["selector", "targetPorts", "endpointPickerRef"],
    "properties": {
        "selector": _SELECTOR,
        "targetPorts": {"type": "array", "minItems": 1, "maxItems": 8, "uniqueItems": True,
                        "items": {"type": "object", "required": ["number"], "properties": {"number": _PORT},
                                  "additionalProperties": False}},
        "appProtocol": {"enum": ["http", "kubernetes.io/h2c"]},
        "endpointPickerRef": {
            "type": "object", "required": ["name"],
            "properties": {"group": {"type": "string"}, "kind": {"type": "string", "minLength": 1},
                           "name": _NAME,
                           "port": {"type": "object", "required": ["number"], "properties": {"number": _PORT},
                                    "additionalProperties": False},
                           "failureMode": {"enum": ["FailOpen", "FailClose"]}},
            "additionalProperties": False},
    },
    "additionalProperties": False})

HTTP_ROUTE = _resource("gateway.networking.k8s.io/v1", "HTTPRoute", {
    "type": "object",
    "properties": {
        "parentRefs": {"type": "array", "items": {
            "type": "object", "required": ["name"],
            "properties": {"group": {"type": "string"}, "kind": {"type": "string"}, "name": _NAME,
                           "namespace": {"type": "string"}, "sectionName": {"type": "string"}, "port": _PORT},
            "additionalProperties": False}},
        "hostnames": {"type": "array", "items": {"type": "string"}},
        "rules": {"type": "array", "maxItems": 16, "items": {
            "type": "object",
            "properties": {
                "matches": {"type": "array", "items": {
                    "type": "object",
                    "properties": {"path": {"type": "object", "properties": {
                        "type": {"enum": ["Exact", "PathPrefix", "RegularExpression"]},
                        "value": {"type": "string", "pattern": "^/"}}, "additionalProperties": False}},
                    "additionalProperties": False}},
                "backendRefs": {"type": "array", "items": {
                    "type": "object", "required": ["name"],
                    "properties": {"group": {"type": "string"}, "kind": {"type": "string"}, "name": _NAME,
                                   "port": _PORT, "weight": {"type": "integer", "minimum": 0}},
                    "additionalProperties": False}},
                "timeouts": {"type": "object", "properties": {"request": _DURATION, "backendRequest": _DURATION},
                             "additionalProperties": False},
            },
            "additionalProperties": False}},
    },
    "additionalProperties": False})

_ENDPOINT = {"type": "object",
             "properties": {"port": {"type": "string"}, "targetPort": {"type": ["string", "integer"]},
                            "path": {"type": "string", "pattern": "^/"}, "scheme": {"enum": ["http", "https"]},
                            "interval": _DURATION, "scrapeTimeout": _DURATION, "honorLabels": {"type": "boolean"}},
             "additionalProperties": False}

POD_MONITOR = _resource("monitoring.coreos.com/v1", "PodMonitor", {
    "type": "object", "required": ["selector", "podMetricsEndpoints"],
    "properties": {"selector": _SELECTOR, "podMetricsEndpoints": {"type": "array", "minItems": 1, "items": _ENDPOINT},
                   "jobLabel": {"type": "string"},
                   "namespaceSelector": {"type": "object"}},
    "additionalProperties": False})

SERVICE_MONITOR = _resource("monitoring.coreos.com/v1", "ServiceMonitor", {
    "type": "object", "required": ["selector", "endpoints"],
    "properties": {"selector": _SELECTOR, "endpoints": {"type": "array", "minItems": 1, "items": _ENDPOINT},
                   "jobLabel": {"type": "string"},
                   "namespaceSelector": {"type": "object"}},
    "additionalProperties": False})

# (apiVersion, kind) -> schema
SCHEMAS = {
    ("inference.networking.k8s.io/v1", "InferencePool"): INFERENCE_POOL,
    ("gateway.networking.k8s.io/v1", "HTTPRoute"): HTTP_ROUTE,
    ("monitoring.coreos.com/v1", "PodMonitor"): POD_MONITOR,
    ("monitoring.coreos.com/v1", "ServiceMonitor"): SERVICE_MONITOR,
}
