"""The perturbation pipeline of pairs projects (HaDes): MASK -> REPLACE -> RANK.

- ``units``: word units of a text (a whole named entity is one unit), which of them may be masked, the mask.
- ``fill``: REPLACE with a masked language model, left to right, one word piece at a time, all candidates
  of a text in one batch.
- ``rank``: perplexity of each candidate under a causal language model.
- ``pipeline``: ``perturb_text``, the three steps together.
- ``models``: loading the models and the spaCy pipeline from local paths, once per process.

No Django here: the services (annotate.services.pairs.perturb) read the settings and write the rows.
"""
