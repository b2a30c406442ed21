"""The server's tokenizer is the protocol core's (`harness.protocol.tokenizer`): the trace
converters synthesize prompts of recorded token counts with the very same pieces."""

from harness.protocol.tokenizer import VOCAB_SIZE, count_tokens, split, token_id, tokenize

__all__ = ["VOCAB_SIZE", "count_tokens", "split", "token_id", "tokenize"]
