"""The seeded data generator: product-offer pairs and search queries with known answers, for the
benches, the demo and the tests (datasets.py; offers.py, intents.py and catalog.py build them).
Nothing here reads a model or Spark."""
