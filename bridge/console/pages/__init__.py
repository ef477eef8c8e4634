"""One module a page: what it reads, what it may change, and the template it fills."""
