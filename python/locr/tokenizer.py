"""The model's tokenizer, as llm.get_tokenizer() returns it: encode, decode, apply_chat_template
with the model's template (the engine's own code, so it is what requests are built with)."""
from __future__ import annotations

import json
from typing import Any, Dict, List, Optional, Union

from ._inputs import chat_messages


class Tokenizer:
    def __init__(self, session: Any, info: Dict[str, Any]) -> None:
        self._s = session
        self._info = info

    @property
    def vocab_size(self) -> int:
        return self._info["vocab_size"]

    def __len__(self) -> int:
        return self.vocab_size

    @property
    def eos_token_id(self) -> Optional[int]:
        ids = self._info["eos_token_ids"]
        return ids[0] if ids else None

    @property
    def image_token(self) -> str:
        """The placeholder a text prompt holds for each image (vLLM's multi_modal_data prompts)."""
        return self._info["image_token"]

    def encode(self, text: str, add_special_tokens: bool = True) -> List[int]:
        """The model's tokenization (Qwen's tokenizer adds no special tokens either way)."""
        return list(self._s.encode(text))

    def __call__(self, text: str, add_special_tokens: bool = True) -> Dict[str, List[int]]:
        return {"input_ids": self.encode(text, add_special_tokens)}

    def decode(self, token_ids: Union[int, List[int]], skip_special_tokens: bool = False) -> str:
        if isinstance(token_ids, int):
            token_ids = [token_ids]
        return self._s.decode(list(token_ids), skip_special_tokens)

    def convert_ids_to_tokens(self, ids: List[int]) -> List[str]:
        return [self._s.decode([i], False) for i in ids]

    def apply_chat_template(self, conversation: List[Dict[str, Any]], tokenize: bool = True,
                            add_generation_prompt: bool = True, chat_template_kwargs: Optional[Dict] = None,
                            **kwargs: Any) -> Union[str, List[int]]:
        """The prompt the model's chat template makes of `conversation` (image parts become the
        template's image placeholder, one token each, before expansion to the image's tokens)."""
        kw = dict(chat_template_kwargs or {})
        kw.update(kwargs)
        text = self._s.apply_chat_template(json.dumps(chat_messages(conversation)), json.dumps(kw) if kw else "",
                                           add_generation_prompt)
        return self.encode(text) if tokenize else text
