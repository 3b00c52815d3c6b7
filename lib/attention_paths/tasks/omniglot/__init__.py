"""One-shot Omniglot: the datasets (:mod:`.data`), episodes (:mod:`.episodes`), the in-context transformer
(:mod:`.model`) and its gradient-descent training (:mod:`.training`), spec experiments §B.1-B.6."""
