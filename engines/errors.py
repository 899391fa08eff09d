"""Flat, catchable errors. Messages say what was expected and what was found."""


class ArtifactError(ValueError):
    """The artifact is missing, malformed, or its files do not match the manifest."""


class ParityError(ValueError):
    """A compiled artifact disagrees with its reference model beyond the tolerance."""


class EngineUnavailableError(RuntimeError):
    """The backend's runtime or hardware is not present on this machine."""


class TargetMismatchError(RuntimeError):
    """The artifact was compiled for a runtime or device that is not the one found."""
