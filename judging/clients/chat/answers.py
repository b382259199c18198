"""Reading what an endpoint answered: a chat completion, or a NotACompletion (an HTTP 200 whose body is not one,
retried as a 5xx is), and the answer's text as the database can keep it."""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from judging.clients.retries import NotACompletion


def storable(text: str) -> str:
    """An endpoint's text with each NUL character (U+0000) shown as U+FFFD: PostgreSQL cannot store NUL (a run would
    fail on saving the answer), and an answer is kept as it came, never dropped, so the NUL is marked, not removed."""
    return text.replace("\x00", "\ufffd")


# What the SDK raises when an HTTP 200 body is not the JSON it expects (text that is not JSON): such an answer, like
# one the SDK hands back as a str (an HTML page), is a NotACompletion, retried as a 5xx is.
MALFORMED_ANSWER = (ValueError, TypeError, AttributeError)


def completion_of(result: Any) -> Any:
    """``result`` of the SDK when it is a chat completion; raises NotACompletion, with the body as text, otherwise.

    The SDK gives a body that is not JSON as a str, and builds a ChatCompletion from any JSON object without checking
    it: one with no ``choices`` list (``{"error": ...}`` sent with status 200) is not a completion either.
    """
    from openai.types.chat import ChatCompletion

    if isinstance(result, ChatCompletion) and isinstance(result.choices, list):
        return result
    if isinstance(result, str):
        raise NotACompletion(result)
    if isinstance(result, ChatCompletion):
        with warnings.catch_warnings():  # pydantic warns of the fields that do not fit; they are what to show
            warnings.simplefilter("ignore")
            raise NotACompletion(result.to_json(indent=None))
    raise NotACompletion(json.dumps(result, default=str) if isinstance(result, (dict, list)) else "")


def _malformed(error: Exception) -> NotACompletion:
    """The NotACompletion for an error the SDK raised reading a 200's body (JSONDecodeError keeps the text)."""
    return NotACompletion(error.doc if isinstance(error, json.JSONDecodeError) else "")


@dataclass
class Tally:
    """What one call sent: every HTTP request (``attempts``, counted by the caller as it sends) and the answers that
    were HTTP 200 and no chat completion (``not_completions``, counted by ``completion``)."""

    attempts: int = 0
    not_completions: int = 0

    def completion(self, send: Callable[[], Any]) -> Any:
        """The chat completion ``send()`` got; a 200 whose body is not one is counted and raised as NotACompletion.
        The SDK's own errors (status, connection) go on as they are, never as a malformed answer."""
        import openai

        try:
            return completion_of(send())
        except openai.OpenAIError:
            raise
        except NotACompletion:
            self.not_completions += 1
            raise
        except MALFORMED_ANSWER as error:
            self.not_completions += 1
            raise _malformed(error) from None
