"""The computations behind the chapters, one module (or folder) per task, each with ``run_*`` (everything
its chapter shows), ``*_summary`` (the JSON record and arrays of a results folder), ``*_claims`` (the
paper's claims checked on the numbers) and ``format_*`` (text tables):

* :mod:`.toy`: the Theory and Sampling chapters' synthetic problem (width sweep, theory vs samples);
* :mod:`.markov`: the hidden-Markov-chain task (the command line's ``hmc``; named so that nobody takes it
  for the Hamiltonian Monte Carlo of the samplers);
* :mod:`.omniglot`: one-shot Omniglot data, episodes, the in-context transformer and its training;
* :mod:`.oneshot`: the theory on the trained transformer's attention;
* :mod:`.pruning`: head pruning with the theory's scores;
* :mod:`.ensemble`: the image claims across several trained networks.
"""
