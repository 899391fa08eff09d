"""Code that runs inside executor Python workers: tokenize, batch, bind a device, score."""
