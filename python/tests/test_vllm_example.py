"""vLLM's documented offline example (its quickstart, docs/getting_started/quickstart.md) runs with
only `from vllm import` changed to `from locr import`. Its model id resolves from a Hugging Face
cache holding the tiny fixture under that name (HF_HUB_OFFLINE: nothing is downloaded)."""
import os
import shutil
import subprocess
import sys

from conftest import MODEL

EXAMPLE = '''\
from vllm import LLM, SamplingParams

prompts = [
    "Hello, my name is",
    "The president of the United States is",
    "The capital of France is",
    "The future of AI is",
]
sampling_params = SamplingParams(temperature=0.8, top_p=0.95)

llm = LLM(model="facebook/opt-125m")

outputs = llm.generate(prompts, sampling_params)

for output in outputs:
    prompt = output.prompt
    generated_text = output.outputs[0].text
    print(f"Prompt: {prompt!r}, Generated text: {generated_text!r}")
'''


def test_vllm_quickstart_runs_with_the_import_changed(tmp_path):
    snapshot = tmp_path / "hf" / "hub" / "models--facebook--opt-125m" / "snapshots" / ("0" * 40)
    shutil.copytree(MODEL, snapshot)
    (snapshot.parents[1] / "refs").mkdir()
    (snapshot.parents[1] / "refs" / "main").write_text("0" * 40)
    script = tmp_path / "basic.py"
    script.write_text(EXAMPLE.replace("from vllm import", "from locr import"))
    assert script.read_text().replace("from locr import", "from vllm import") == EXAMPLE
    env = dict(os.environ, HF_HOME=str(tmp_path / "hf"), HF_HUB_OFFLINE="1")
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=600,
                       cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    lines = [l for l in r.stdout.splitlines() if l.startswith("Prompt: ")]
    assert len(lines) == 4
    assert lines[0].startswith("Prompt: 'Hello, my name is', Generated text: '")
