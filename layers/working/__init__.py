"""L1 working memory: sessions and their transcripts."""
