"""The project's programs, one module each: ``fivethousand SUBCOMMAND`` runs them (``cli``)."""
