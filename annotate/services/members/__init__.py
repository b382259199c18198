"""Who works on a project: new users, members and their roles, and batch duties moved between annotators.

The rules (README, "Running a project"):

- A project keeps an admin: its last admin can be neither removed nor given another role.
- The figures (agreement, rates, detector evaluation, curation) read only submitted
  assignments. An annotator's spans and done marks are never deleted here: unassigning them
  keeps them stored, and in exports (which list every stored span), but out of the figures,
  and the annotator can no longer open the batch. Because that drops work from the figures,
  unassigning or reassigning someone who has work in the round needs an explicit
  confirmation, and a submitted round must be re-opened first.
- Removing a member drops their open assignments that hold no work, and is refused while an
  open assignment holds work (unassign or reassign it first). Their submitted assignments stay
  and keep counting.

By topic: ``users`` (new users, passwords, invitations), ``roster`` (members and roles), ``duties``
(assignments moved between annotators), ``common`` (errors and the work an assignment holds).
"""

from annotate.services.members.common import (
    UNKNOWN_ROLE,
    UNKNOWN_USER,
    USERNAME_CHARACTER,
    MemberError,
    NeedsConfirmation,
    NewMember,
    Role,
    Work,
)
from annotate.services.members.duties import (
    assign_annotator,
    assignment_work,
    batch_staffing,
    reassign_annotator,
    unassign_annotator,
)
from annotate.services.members.roster import (
    AddedMember,
    add_member,
    add_or_change_member,
    change_role,
    member_rows,
    project_member_rows,
    remove_member,
)
from annotate.services.members.users import (
    clean_username,
    create_member,
    invitation_path,
    set_password_path,
)

__all__ = [
    "AddedMember",
    "MemberError",
    "NeedsConfirmation",
    "NewMember",
    "Role",
    "UNKNOWN_ROLE",
    "UNKNOWN_USER",
    "USERNAME_CHARACTER",
    "Work",
    "add_member",
    "add_or_change_member",
    "assign_annotator",
    "assignment_work",
    "batch_staffing",
    "change_role",
    "clean_username",
    "create_member",
    "invitation_path",
    "member_rows",
    "project_member_rows",
    "reassign_annotator",
    "remove_member",
    "set_password_path",
    "unassign_annotator",
]
