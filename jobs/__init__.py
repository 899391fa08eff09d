"""spark-submit entry points: parse args, read, score, write, summarise."""
