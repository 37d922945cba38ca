"""LLM: vLLM's offline API (generate, chat) and OCR helpers on locr's engine, in this process.

Every call hands all of its requests to the engine at once, so they batch together as a server's
requests do (continuous batching over a paged KV cache); the GIL is released while the engine runs;
Ctrl-C cancels what is in flight and frees it before KeyboardInterrupt goes on. A request that
cannot be built (a broken image, a prompt longer than the context) or that the engine ends with a
fault gets a result with finish_reason "error" and the message; the others complete.
"""
from __future__ import annotations

import itertools
import json
import os
import time
import warnings
from typing import Any, Dict, Iterable, Iterator, List, Optional, Sequence, Union

from . import _core
from ._inputs import chat_messages, image_url, read_source
from ._progress import progress
from .outputs import CompletionOutput, Logprob, OcrPage, RequestMetrics, RequestOutput
from .sampling_params import SamplingParams
from .tokenizer import Tokenizer

PromptType = Union[str, List[int], Dict[str, Any]]

# Keyword arguments whose flag is spelt differently, or that only this API has.
_RENAMED = {"log_level": "uvicorn-log-level", "served_model_name": "served-model-name"}


def _flag_args(name: str, kind: str, value: Any) -> List[str]:
    flag = "--" + name
    if kind == "flag":
        return [flag] if value else ["--no-" + name]
    if isinstance(value, (dict,)) or (kind == "value" and isinstance(value, (list, tuple))):
        return [flag, json.dumps(value)]
    if kind == "values":
        values = value if isinstance(value, (list, tuple)) else [value]
        return [flag] + [str(v) for v in values]
    if isinstance(value, bool):
        return [flag, "true" if value else "false"]
    return [flag, str(value)]


class _Failed:
    """A request refused before it reached the engine."""

    def __init__(self, request_id: str, message: str, prompt: Optional[str], prompt_token_ids: Optional[List[int]],
                 n: int) -> None:
        self.request_id, self.message, self.prompt, self.prompt_token_ids, self.n = (
            request_id, message, prompt, prompt_token_ids, n)


class _Pending:
    def __init__(self, job: Any, request_id: str, source: Optional[str] = None) -> None:
        self.job, self.request_id, self.source = job, request_id, source
        self.arrival = time.time()
        self.finished_at: Optional[float] = None


class LLM:
    """An engine for one model, vLLM's LLM class for locr.

    model: a model directory (Hugging Face layout), a hub id ORG/NAME (pulled into the Hugging Face
    cache like `locr pull`), or a text GGUF with `mmproj=`. Keyword arguments are vLLM's engine
    arguments, the flags of `locr serve` (`max_num_seqs=16` is `--max-num-seqs 16`); locr-only ones
    too (threads, backend, device, mmproj, loop_guard, ...). vLLM arguments with no meaning here are
    accepted with a notice saying so, as `locr serve` does; names locr does not know at all warn.
    """

    def __init__(self, model: Union[str, os.PathLike], *, tokenizer: Optional[str] = None,
                 dtype: Any = "auto", quantization: Optional[str] = None, kv_cache_dtype: str = "auto",
                 max_model_len: Optional[int] = None, max_num_seqs: Optional[int] = None,
                 max_num_batched_tokens: Optional[int] = None, enable_prefix_caching: Optional[bool] = None,
                 gpu_memory_utilization: float = 0.9, tensor_parallel_size: int = 1, seed: Optional[int] = None,
                 trust_remote_code: bool = False, limit_mm_per_prompt: Optional[Dict[str, int]] = None,
                 device: Optional[str] = None, threads: Optional[int] = None, mmproj: Optional[str] = None,
                 **kwargs: Any) -> None:
        flags = dict(_core.Session.serve_flags())
        model = os.fspath(model)
        if tokenizer is not None and os.fspath(tokenizer) != model:
            kwargs["tokenizer"] = os.fspath(tokenizer)
        dtype = str(dtype).replace("torch.", "")
        given = dict(dtype=dtype, quantization=quantization, kv_cache_dtype=kv_cache_dtype,
                     max_model_len=max_model_len, max_num_seqs=max_num_seqs,
                     max_num_batched_tokens=max_num_batched_tokens, enable_prefix_caching=enable_prefix_caching,
                     gpu_memory_utilization=gpu_memory_utilization, tensor_parallel_size=tensor_parallel_size,
                     seed=seed, trust_remote_code=trust_remote_code or None,
                     limit_mm_per_prompt=limit_mm_per_prompt, device=device, threads=threads, mmproj=mmproj)
        given.update(kwargs)
        argv = ["serve", model]
        for key, value in given.items():
            if value is None:
                continue
            name = _RENAMED.get(key, key.replace("_", "-"))
            kind = flags.get(name)
            if kind is None:
                warnings.warn(f"LLM(): '{key}' is not an engine argument locr knows; it has no effect",
                              stacklevel=2)
                continue
            argv += _flag_args(name, kind, value)
        self._argv = argv
        self._session = _core.Session(argv)
        self._info = json.loads(self._session.info())
        self._tokenizer = Tokenizer(self._session, self._info)
        self._counter = itertools.count()

    # --- vLLM's accessors ---

    def get_tokenizer(self) -> Tokenizer:
        return self._tokenizer

    def get_default_sampling_params(self) -> SamplingParams:
        """The model's defaults (generation_config.json), as requests get them when unset."""
        d = self._info["defaults"]
        return SamplingParams(temperature=d["temperature"], top_p=d["top_p"], top_k=d["top_k"] or None,
                              min_p=d["min_p"] or None, repetition_penalty=d["repetition_penalty"],
                              max_tokens=d["max_tokens"])

    @property
    def info(self) -> Dict[str, Any]:
        """Model path, device, max_model_len, max_num_seqs, vocabulary and generation defaults."""
        return dict(self._info)

    def close(self) -> None:
        """Stops the engine (what is in flight is cancelled) and frees the model."""
        if self._session is not None:
            self._session.shutdown()
            self._session = None

    def __enter__(self) -> "LLM":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    # --- generate / chat ---

    def generate(self, prompts: Union[PromptType, Sequence[PromptType]],
                 sampling_params: Union[SamplingParams, Sequence[SamplingParams], None] = None,
                 use_tqdm: bool = True, lora_request: Any = None, **kwargs: Any) -> List[RequestOutput]:
        """Completes each prompt (no chat template): a string, a list of token ids, or a dict
        {"prompt": str | "prompt_token_ids": [...], "multi_modal_data": {"image": img | [img, ...]}}
        whose text holds the model's image placeholder (get_tokenizer().image_token) per image.
        Results in input order."""
        if lora_request is not None:
            raise ValueError("LoRA adapters are not supported by locr")
        if kwargs:
            raise TypeError(f"generate() got unexpected arguments: {', '.join(sorted(kwargs))}")
        if isinstance(prompts, (str, dict)) or (isinstance(prompts, list) and prompts and isinstance(prompts[0], int)):
            prompts = [prompts]
        prompts = list(prompts)
        params = self._params_for(sampling_params, len(prompts))
        pending = [self._submit_completion(p, sp) for p, sp in zip(prompts, params)]
        return self._collect(pending, use_tqdm, "Processed prompts")

    def chat(self, messages: Union[List[Dict[str, Any]], List[List[Dict[str, Any]]]],
             sampling_params: Union[SamplingParams, Sequence[SamplingParams], None] = None,
             use_tqdm: bool = True, lora_request: Any = None, chat_template: Optional[str] = None,
             chat_template_content_format: str = "auto", add_generation_prompt: bool = True,
             continue_final_message: bool = False, tools: Any = None,
             chat_template_kwargs: Optional[Dict[str, Any]] = None, **kwargs: Any) -> List[RequestOutput]:
        """One conversation (a list of messages) or a list of them, through the model's chat
        template, as /v1/chat/completions takes them. Image parts: {"type": "image_url",
        "image_url": {"url": ...}} with a data:, file:// or http(s) URL or a path, or {"type":
        "image_pil", "image_pil": PIL.Image} / {"type": "image", "image": PIL.Image | bytes | path}.
        Results in input order."""
        if lora_request is not None:
            raise ValueError("LoRA adapters are not supported by locr")
        if chat_template is not None:
            raise ValueError("chat(chat_template=...) is not supported; give LLM(chat_template=...) instead")
        if not add_generation_prompt or continue_final_message:
            raise ValueError("only add_generation_prompt=True, continue_final_message=False are supported")
        if tools:
            raise ValueError("tools are not supported by locr")
        if kwargs:
            raise TypeError(f"chat() got unexpected arguments: {', '.join(sorted(kwargs))}")
        conversations = [messages] if messages and isinstance(messages[0], dict) else list(messages)
        params = self._params_for(sampling_params, len(conversations))
        pending = [self._submit_chat(c, sp, chat_template_kwargs) for c, sp in zip(conversations, params)]
        return self._collect(pending, use_tqdm, "Processed prompts")

    # --- OCR ---

    def ocr(self, source: Any, pages: Union[str, Iterable[int], None] = None, dpi: Optional[float] = None,
            mode: str = "markdown", *, sampling_params: Optional[SamplingParams] = None,
            password: Optional[str] = None, use_tqdm: bool = True, **options: Any) -> Any:
        """OCR of a document: a PDF, TIFF or image as a path, bytes, a file object or a PIL image.
        Returns its pages (OcrPage, in page order) as `locr ocr` makes them: Markdown, tokens,
        finish reason, confidence, figure boxes. A list of documents gives a list of page lists,
        all batched through the engine together. pages: "1-3,7" or page numbers (1-based); dpi:
        PDF rendering resolution (default: the longest edge at 1540 px); mode: "markdown" or
        "grounding" (LightOnOCR-3: layout blocks with boxes). `options` are /v1/ocr's fields
        (fix_dollars, tables_to_markdown, drop_headers_footers, confidence_threshold, ...)."""
        many = isinstance(source, (list, tuple))
        sources = list(source) if many else [source]
        results: List[List[OcrPage]] = [[] for _ in sources]
        for doc, page in self._ocr_pages(sources, pages, dpi, mode, sampling_params, password, use_tqdm, options):
            results[doc].append(page)
        for r in results:
            r.sort(key=lambda p: p.index)
        return results if many else results[0]

    def ocr_iter(self, source: Any, pages: Union[str, Iterable[int], None] = None, dpi: Optional[float] = None,
                 mode: str = "markdown", *, sampling_params: Optional[SamplingParams] = None,
                 password: Optional[str] = None, use_tqdm: bool = False, **options: Any) -> Iterator[OcrPage]:
        """As ocr(), yielding each page as soon as it is done (pages of a list of documents carry
        their document in `source`). Closing the iterator early cancels the remaining pages."""
        sources = list(source) if isinstance(source, (list, tuple)) else [source]
        for _, page in self._ocr_pages(sources, pages, dpi, mode, sampling_params, password, use_tqdm, options):
            yield page

    # --- internals ---

    def _require(self) -> Any:
        if self._session is None:
            raise RuntimeError("this LLM has been closed")
        return self._session

    def _params_for(self, sp: Any, n: int) -> List[SamplingParams]:
        if sp is None:
            return [SamplingParams()] * n
        if isinstance(sp, SamplingParams):
            return [sp] * n
        sp = list(sp)
        if len(sp) != n:
            raise ValueError(f"{len(sp)} sampling params for {n} prompts: give one, or one per prompt")
        return sp

    def _next_id(self) -> str:
        return str(next(self._counter))

    def _submit_completion(self, prompt: PromptType, sp: SamplingParams) -> Any:
        session = self._require()
        rid = self._next_id()
        text: Optional[str] = None
        ids: Optional[List[int]] = None
        images: List[str] = []
        try:
            if isinstance(prompt, str):
                text = prompt
            elif isinstance(prompt, list):
                ids = [int(t) for t in prompt]
            elif isinstance(prompt, dict):
                if "prompt_token_ids" in prompt:
                    ids = [int(t) for t in prompt["prompt_token_ids"]]
                elif "prompt" in prompt:
                    text = prompt["prompt"]
                else:
                    raise ValueError("a prompt dict needs 'prompt' or 'prompt_token_ids'")
                mm = prompt.get("multi_modal_data") or {}
                unknown = set(mm) - {"image"}
                if unknown:
                    raise ValueError(f"multi_modal_data: only 'image' is supported, got {sorted(unknown)}")
                img = mm.get("image")
                if img is not None:
                    images = [image_url(i) for i in (img if isinstance(img, (list, tuple)) else [img])]
            else:
                raise TypeError(f"a prompt must be a string, a list of token ids or a dict, got {type(prompt).__name__}")
            body = {"prompt": text if ids is None else ids, **sp.request_fields(chat=False)}
            return _Pending(session.completion(json.dumps(body), images), rid)
        except (_core.RequestError, _core.EngineError, ValueError, TypeError, OSError) as e:
            return _Failed(rid, str(e), text, ids, sp.n or 1)

    def _submit_chat(self, conversation: List[Dict[str, Any]], sp: SamplingParams,
                     template_kwargs: Optional[Dict[str, Any]]) -> Any:
        session = self._require()
        rid = self._next_id()
        try:
            body: Dict[str, Any] = {"messages": chat_messages(conversation), **sp.request_fields(chat=True)}
            if template_kwargs:
                body["chat_template_kwargs"] = template_kwargs
            return _Pending(session.chat(json.dumps(body)), rid)
        except (_core.RequestError, _core.EngineError, ValueError, TypeError, OSError) as e:
            return _Failed(rid, str(e), None, None, sp.n or 1)

    def _wait(self, pending: List[Any], use_tqdm: bool, desc: str) -> Iterator[tuple]:
        """Polls every job until all are done, the GIL released while waiting; yields (job index,
        finished choice indices) as choices finish. Ctrl-C (or the consumer closing the generator)
        cancels the unfinished jobs and waits until the engine has dropped them."""
        live = [i for i, p in enumerate(pending) if isinstance(p, _Pending)]
        bar = progress(len(pending), desc, use_tqdm)
        bar.update(len(pending) - len(live))
        try:
            while live:
                still = []
                for k, i in enumerate(live):
                    job = pending[i].job
                    finished = job.poll(20 if k == 0 else 0)
                    if job.done():
                        pending[i].finished_at = time.time()
                        bar.update(1)
                    else:
                        still.append(i)
                    if finished:
                        yield i, finished
                live = still
        except BaseException:
            for i in live:
                pending[i].job.cancel()
            for i in live:
                while not pending[i].job.done():
                    pending[i].job.poll(50)
            raise
        finally:
            bar.close()

    def _collect(self, pending: List[Any], use_tqdm: bool, desc: str) -> List[RequestOutput]:
        for _ in self._wait(pending, use_tqdm, desc):
            pass
        return [self._request_output(p) for p in pending]

    def _request_output(self, p: Any) -> RequestOutput:
        if isinstance(p, _Failed):
            outs = [CompletionOutput(index=k, text="", token_ids=[], cumulative_logprob=None, logprobs=None,
                                     finish_reason="error", error=p.message) for k in range(p.n)]
            return RequestOutput(request_id=p.request_id, prompt=p.prompt, prompt_token_ids=p.prompt_token_ids,
                                 outputs=outs, finished=True, error=p.message)
        job = p.job
        results = [json.loads(job.result(k)) for k in range(job.n_choices())]
        outs = [self._completion_output(r) for r in results]
        first = results[0]
        metrics = RequestMetrics(arrival_time=p.arrival, finished_time=p.finished_at,
                                 num_prompt_tokens=len(first["prompt_token_ids"]),
                                 num_generation_tokens=sum(len(o.token_ids) for o in outs),
                                 num_cached_tokens=first["cached_tokens"])
        errors = [o.error for o in outs if o.error]
        return RequestOutput(request_id=p.request_id, prompt=first["prompt"], prompt_token_ids=first["prompt_token_ids"],
                             outputs=outs, finished=True, metrics=metrics, num_cached_tokens=first["cached_tokens"],
                             error=errors[0] if errors else None)

    def _completion_output(self, r: Dict[str, Any]) -> CompletionOutput:
        logprobs = None
        cumulative = None
        if r["logprobs"] is not None:
            logprobs = []
            cumulative = 0.0
            for t in r["logprobs"]:
                top = t["top"]
                entry: Dict[int, Logprob] = {}
                for rank, (tid, lp) in enumerate(top, start=1):
                    entry[tid] = Logprob(lp, rank, self._token_text(tid))
                if t["token"] not in entry:
                    rank = 1 + sum(1 for _, lp in top if lp > t["logprob"])
                    entry[t["token"]] = Logprob(t["logprob"], rank, self._token_text(t["token"]))
                logprobs.append(entry)
                cumulative += t["logprob"]
        return CompletionOutput(index=r["index"], text=r["text"], token_ids=r["token_ids"],
                                cumulative_logprob=cumulative, logprobs=logprobs, finish_reason=r["finish_reason"],
                                stop_reason=r["stop_reason"], error=r["error"])

    def _token_text(self, token_id: int) -> Optional[str]:
        try:
            return self._tokenizer.decode([token_id])
        except _core.RequestError:  # an id of the model's padded vocabulary that no token has
            return None

    def _ocr_pages(self, sources: List[Any], pages: Any, dpi: Optional[float], mode: str,
                   sp: Optional[SamplingParams], password: Optional[str], use_tqdm: bool,
                   options: Dict[str, Any]) -> Iterator[tuple]:
        session = self._require()
        if mode not in ("markdown", "ocr", "grounding"):
            raise ValueError(f"mode must be 'markdown' or 'grounding', got {mode!r}")
        body: Dict[str, Any] = dict(options)
        if sp is not None:
            body.update(sp.request_fields(chat=True))
        if mode == "grounding":
            body["mode"] = "grounding"
        if pages is not None:
            body["pages"] = pages if isinstance(pages, str) else ",".join(str(int(p)) for p in pages)
        if dpi is not None:
            body["dpi"] = dpi
        if password is not None:
            body["password"] = password
        text = json.dumps(body)
        names = [s if isinstance(s, str) else os.fspath(s) if isinstance(s, os.PathLike) else None for s in sources]
        # Documents the engine refuses (unreadable, bad options) raise here, before anything runs.
        jobs = [_Pending(session.ocr(text, read_source(s, "document")), self._next_id(), names[i])
                for i, s in enumerate(sources)]
        for i, finished in self._wait(jobs, use_tqdm, "OCR documents"):
            for k in finished:
                yield i, OcrPage.from_json(json.loads(jobs[i].job.page(k)), jobs[i].source)
