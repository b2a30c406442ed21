"""`wsmode check`: recorded Responses traffic read by content and judged offline."""
