"""One package per domain or adapter; each defines its ``Domain`` subclass and its environment class."""
