"""locr: LightOn's document-OCR models on a native engine, with vLLM's offline API.

    from locr import LLM, SamplingParams
    llm = LLM(model="lightonai/LightOnOCR-2-1B", max_model_len=4096, max_num_seqs=16)
    out = llm.chat([{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "page.png"}}]}],
                   SamplingParams(temperature=0, max_tokens=1024))
    print(out[0].outputs[0].text)
    pages = llm.ocr("paper.pdf", pages="1-3")

docs/python.md in the repository has the whole API.
"""
from ._core import EngineError, RequestError, __version__
from .llm import LLM
from .outputs import CompletionOutput, Logprob, OcrPage, RequestMetrics, RequestOutput
from .sampling_params import SamplingParams
from .tokenizer import Tokenizer

__all__ = ["LLM", "SamplingParams", "RequestOutput", "CompletionOutput", "RequestMetrics", "Logprob", "OcrPage",
           "Tokenizer", "RequestError", "EngineError", "__version__"]
