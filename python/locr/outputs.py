"""Results in vLLM's shapes: RequestOutput, CompletionOutput, Logprob; and OCR pages (OcrPage)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Union


@dataclass
class Logprob:
    """One token's log-probability, its rank in the distribution and its text (vLLM's Logprob)."""
    logprob: float
    rank: Optional[int] = None
    decoded_token: Optional[str] = None


SampleLogprobs = List[Dict[int, Logprob]]


@dataclass
class CompletionOutput:
    """One generated sequence. finish_reason: "stop", "length", "abort" or "error" (then `error`
    says why: a broken image, a prompt too long, an engine fault)."""
    index: int
    text: str
    token_ids: List[int]
    cumulative_logprob: Optional[float]
    logprobs: Optional[SampleLogprobs]
    finish_reason: Optional[str] = None
    stop_reason: Union[int, str, None] = None
    error: Optional[str] = None

    def finished(self) -> bool:
        return self.finish_reason is not None


@dataclass
class RequestMetrics:
    """Wall-clock times (time.time()) of the request and its token counts."""
    arrival_time: float
    first_scheduled_time: Optional[float] = None
    first_token_time: Optional[float] = None
    finished_time: Optional[float] = None
    num_prompt_tokens: int = 0
    num_generation_tokens: int = 0
    num_cached_tokens: int = 0


@dataclass
class RequestOutput:
    """One prompt's result (vLLM's RequestOutput): `outputs` holds its n completions."""
    request_id: str
    prompt: Optional[str]
    prompt_token_ids: Optional[List[int]]
    outputs: List[CompletionOutput]
    finished: bool = True
    metrics: Optional[RequestMetrics] = None
    prompt_logprobs: None = None
    num_cached_tokens: Optional[int] = None
    error: Optional[str] = None  # the request could not be built or run (every output says so too)

    def __repr__(self) -> str:
        return (f"RequestOutput(request_id={self.request_id!r}, prompt={self.prompt!r}, "
                f"prompt_token_ids={self.prompt_token_ids!r}, outputs={self.outputs!r}, finished={self.finished})")


@dataclass
class OcrPage:
    """One page of a document, as `locr ocr` and /v1/ocr give it.

    text: the page's Markdown (post-processed as `locr ocr` writes page-NNNN.md); raw: the model's
    output; token_ids; finish_reason; confidence: {score, mean_logprob, min_logprob, tokens,
    tokens_below_threshold, threshold} or None; figures: the boxes the -bbox models mark, each
    {alt, target, box: [x1, y1, x2, y2] on 0..1000, pixels: [left, top, right, bottom]}; blocks:
    the layout blocks in grounding mode; width/height: the image the model read.
    """
    page: int
    index: int
    text: str
    raw: str
    token_ids: List[int]
    finish_reason: Optional[str]
    stop_reason: Union[int, str, None]
    confidence: Optional[Dict[str, Any]]
    figures: List[Dict[str, Any]]
    width: int
    height: int
    usage: Dict[str, int]
    timings: Dict[str, Optional[float]]
    blocks: Optional[List[Dict[str, Any]]] = None
    error: Optional[str] = None
    source: Optional[str] = None
    extra: Dict[str, Any] = field(default_factory=dict)

    @property
    def markdown(self) -> str:
        return self.text

    @classmethod
    def from_json(cls, j: Dict[str, Any], source: Optional[str]) -> "OcrPage":
        known = {"page", "index", "text", "raw", "token_ids", "finish_reason", "stop_reason", "confidence",
                 "figures", "dimensions", "usage", "timings", "blocks", "error"}
        return cls(page=j["page"], index=j["index"], text=j["text"], raw=j.get("raw", j["text"]),
                   token_ids=j.get("token_ids", []), finish_reason=j.get("finish_reason"),
                   stop_reason=j.get("stop_reason"), confidence=j.get("confidence"), figures=j.get("figures", []),
                   width=j["dimensions"]["width"], height=j["dimensions"]["height"], usage=j.get("usage", {}),
                   timings=j.get("timings", {}), blocks=j.get("blocks"), error=j.get("error"), source=source,
                   extra={k: v for k, v in j.items() if k not in known})
