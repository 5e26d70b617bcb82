"""What the class mode refuses, each with a sentence the page can show as it is."""


class ClassroomError(Exception):
    """A refused class action; str(error) is a plain sentence for the person who tried it."""


class RoomNotFound(ClassroomError):
    pass


class RoomsFull(ClassroomError):
    pass


class RoomLocked(ClassroomError):
    """The teacher closed the room to new seats."""


class NotAllowed(ClassroomError):
    """A missing or wrong teacher key or student token."""


class TooManyAttempts(ClassroomError):
    pass


class VoteClosed(ClassroomError):
    pass


class QuestionNotFound(ClassroomError):
    pass


class InvalidInput(ClassroomError):
    pass


class TooLong(InvalidInput):
    pass


class WrongPhase(ClassroomError):
    """A teacher action that the question's phase does not allow (closing a vote that is not open, ...)."""
