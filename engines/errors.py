"""Flat, catchable errors. Messages say what was expected and what was found."""


class ArtifactError(ValueError):
    """The artifact is missing, malformed, or its files do not match the manifest."""


class ParityError(ValueError):
    """A compiled artifact disagrees with its reference model beyond the tolerance."""


class EngineUnavailableError(RuntimeError):
    """The backend's runtime or hardware is not present on this machine."""


class TargetMismatchError(RuntimeError):
    """The artifact was compiled for a runtime or device that is not the one found."""


class EngineCallError(RuntimeError):
    """The engine's runtime refused a call the engine made (a shape, a tensor address, a profile).

    That is a bug or a mismatch between engine and runtime, the same for every batch, so the
    scorer does not split and retry the batch: the task fails with this message.
    """
