from udfs.engine_cache import EngineCache


class Closable:
    def __init__(self, name):
        self.name, self.closed = name, False

    def close(self):
        self.closed = True


def test_loads_once_per_key_and_closes_what_it_evicts():
    cache = EngineCache(capacity=2)
    loads = []

    def loader(name):
        def load():
            loads.append(name)
            return Closable(name)
        return load

    a, first = cache.get_or_load("a", loader("a"))
    again, second = cache.get_or_load("a", loader("a"))
    assert (first, second) == (True, False) and again is a and loads == ["a"]
    b, _ = cache.get_or_load("b", loader("b"))
    cache.get_or_load("a", loader("a"))  # a is now the most recent
    cache.get_or_load("c", loader("c"))  # evicts b, the least recently used
    assert b.closed and not a.closed and loads == ["a", "b", "c"]
