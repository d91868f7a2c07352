"""`--tokenizer PATH`: a local Hugging Face tokenizer, to count tokens in logged message content.

A tokenizer.json file, or a folder holding one; read with the `tokenizers` library alone, so the audit never
imports transformers or torch. Nothing is ever downloaded. Counts are of the message text only: the provider's
own count also includes its chat-template tokens, so SPOR from a tokenizer is slightly low, never high.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ..core.errors import UserError


class TokenizerError(UserError):
    pass


@dataclass
class Tokenizer:
    name: str
    _encode: Callable[[list[str]], list[list[int]]]

    def ids(self, texts: list[str]) -> list[list[int]]:
        return self._encode(texts) if texts else []

    def count(self, texts: list[str]) -> list[int]:
        return [len(x) for x in self.ids(texts)]


def load_tokenizer(path: str | Path) -> Tokenizer:
    path = Path(path)
    if not path.exists():
        raise TokenizerError(f"--tokenizer {path}: no such file or folder")
    file = path / "tokenizer.json" if path.is_dir() else path
    if file.is_file():
        from tokenizers import Tokenizer as HFTokenizer  # here: only an audit given --tokenizer pays its memory

        try:
            tok = HFTokenizer.from_file(str(file))
        except Exception as exc:  # noqa: BLE001 - a bad file becomes one clear message
            raise TokenizerError(f"--tokenizer {file}: not a tokenizers JSON file "
                                 f"({str(exc).splitlines()[0]})") from None
        tok.no_truncation()
        tok.no_padding()
        return Tokenizer(str(file), lambda texts: [e.ids for e in tok.encode_batch(texts, add_special_tokens=False)])
    if path.is_dir():
        # A slow-tokenizer folder (tokenizer.model, vocab files) needs transformers to convert; the audit reads
        # the fast format only, and says how to get it.
        raise TokenizerError(f"--tokenizer {path}: no tokenizer.json in this folder; save one with transformers' "
                             "AutoTokenizer.from_pretrained(folder).save_pretrained(folder)")
    raise TokenizerError(f"--tokenizer {path}: not a file or folder")
