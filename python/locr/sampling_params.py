"""SamplingParams: vLLM's names and meanings. A field left unset takes the model's default (its
generation_config.json, as `locr serve` applies it), not vLLM's class defaults."""
from __future__ import annotations

import copy
from typing import Any, Dict, List, Optional, Union

# Every field, in vLLM's order. None: not given (the model's default applies).
_FIELDS = (
    "n", "best_of", "presence_penalty", "frequency_penalty", "repetition_penalty", "temperature", "top_p",
    "top_k", "min_p", "seed", "stop", "stop_token_ids", "ignore_eos", "max_tokens", "min_tokens", "logprobs",
    "prompt_logprobs", "skip_special_tokens", "spaces_between_special_tokens", "include_stop_str_in_output",
    "detokenize", "loop_guard",
)


class SamplingParams:
    """How to generate: vLLM's SamplingParams, with `loop_guard` (locr's repetition stop) added.

    Given fields go to the engine as a request's fields; unset ones (None) take the model's
    generation_config.json defaults (temperature 0.2 and top_p 0.9 for LightOnOCR-2), and
    max_tokens the rest of the context (vLLM's class would default to 16 tokens).
    """

    def __init__(self, n: Optional[int] = None, best_of: Optional[int] = None,
                 presence_penalty: Optional[float] = None, frequency_penalty: Optional[float] = None,
                 repetition_penalty: Optional[float] = None, temperature: Optional[float] = None,
                 top_p: Optional[float] = None, top_k: Optional[int] = None, min_p: Optional[float] = None,
                 seed: Optional[int] = None, stop: Optional[Union[str, List[str]]] = None,
                 stop_token_ids: Optional[List[int]] = None, ignore_eos: Optional[bool] = None,
                 max_tokens: Optional[int] = None, min_tokens: Optional[int] = None,
                 logprobs: Optional[int] = None, prompt_logprobs: Optional[int] = None,
                 skip_special_tokens: Optional[bool] = None, spaces_between_special_tokens: Optional[bool] = None,
                 include_stop_str_in_output: Optional[bool] = None, detokenize: Optional[bool] = None,
                 loop_guard: Optional[bool] = None, **unsupported: Any) -> None:
        if unsupported:
            names = ", ".join(sorted(unsupported))
            raise TypeError(f"SamplingParams: locr does not support {names}")
        values = dict(locals())
        for f in _FIELDS:
            setattr(self, f, values[f])
        if isinstance(self.stop, str):
            self.stop = [self.stop]
        self._check()

    def _check(self) -> None:
        if self.n is not None and self.n < 1:
            raise ValueError(f"n must be at least 1, got {self.n}.")
        if self.best_of is not None and self.best_of != (self.n or 1):
            raise ValueError("best_of is not supported by locr (leave it unset or equal to n)")
        if self.prompt_logprobs is not None:
            raise ValueError("prompt_logprobs is not supported by locr")
        if self.detokenize is False:
            raise ValueError("detokenize=False is not supported by locr")
        if self.max_tokens is not None and self.max_tokens < 1:
            raise ValueError(f"max_tokens must be at least 1, got {self.max_tokens}.")
        if self.logprobs is not None and self.logprobs < 0:
            raise ValueError(f"logprobs must be non-negative, got {self.logprobs}.")

    @classmethod
    def from_optional(cls, **kwargs: Any) -> "SamplingParams":
        return cls(**{k: v for k, v in kwargs.items() if v is not None})

    def clone(self) -> "SamplingParams":
        return copy.deepcopy(self)

    def given(self) -> Dict[str, Any]:
        """The fields that were set, by name."""
        return {f: getattr(self, f) for f in _FIELDS if getattr(self, f) is not None}

    def request_fields(self, chat: bool) -> Dict[str, Any]:
        """The fields as an OpenAI/vLLM request body carries them (chat or completions)."""
        body: Dict[str, Any] = {}
        for f, v in self.given().items():
            if f in ("best_of", "detokenize", "spaces_between_special_tokens", "prompt_logprobs"):
                continue
            if f == "logprobs":
                if chat:
                    body["logprobs"] = True
                    body["top_logprobs"] = v
                else:
                    body["logprobs"] = v
                continue
            body[f] = v
        return body

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v!r}" for k, v in self.given().items())
        return f"SamplingParams({fields})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SamplingParams) and self.given() == other.given()
