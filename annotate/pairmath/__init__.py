"""Pure computations of the perturbed-pair workflow (HaDes): no Django imports, tested directly."""
