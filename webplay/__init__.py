"""5000 in the browser: a small local web app (FastAPI) where a person plays against
the project's bots, with hints; ``python -m fivethousand_rl.webplay`` starts it."""
