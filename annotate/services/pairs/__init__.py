"""Services of the perturbed-pair workflow (HaDes): import, perturbation, queue, flags, rounds, agreement, export."""
