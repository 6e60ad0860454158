"""5000 in the browser: a small local web app (FastAPI) where a person plays against
the project's bots, with hints; ``python -m fivethousand_rl.webplay`` starts it."""

if __name__ == "webplay":  # imported from a clone's root as a top-level package
    raise ImportError("import fivethousand_rl.webplay, not webplay: the package has one namespace")
