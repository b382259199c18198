"""Pages of the perturbed-pair workflow (HaDes): project page, labeling page, rounds, flags."""
