"""python manage.py prolific <what> ...: a study's participants on Prolific.

    bonus STUDY --amount 1.50 (--qualified | --participants PID,PID) --reason TEXT
          [--key KEY] [--pay] [--again]
                                  record and set up a bonus (and pay it; the same
                                  bonus to the same people within 24 h needs --again)
    pay BONUS                     pay a bonus that is set up (at most once)
    settle BONUS --paid|--not-paid
                                  record what Prolific shows for a pay request
                                  that got no answer
    message STUDY (--all | --qualified | --participants PID,PID) --body TEXT
    approve STUDY                 approve every completed, accepted submission
    pause|start|stop STUDY        the study's state on Prolific
    group-create NAME --kind allow|block
    group-add GROUP (--qualified STUDY | --excluded STUDY) --reason TEXT
    group-remove GROUP --participants PID,PID
    group-filter STUDY GROUP      recruit STUDY through (or around) GROUP

STUDY is a study's id; BONUS a bonus payment's id; GROUP a participant
group's name. Needs PROLIFIC_API_TOKEN (and PROLIFIC_WORKSPACE_ID for groups).
"""

from __future__ import annotations

import uuid
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotator.models import BonusPayment, Participant, ParticipantGroup, Study
from annotator.prolific_api import ProlificClient


class Command(BaseCommand):
    help = "Bonuses, messages, approvals, study state and participant groups on Prolific."

    def add_arguments(self, parser: CommandParser) -> None:
        commands = parser.add_subparsers(dest="what", required=True)
        bonus = commands.add_parser("bonus")
        bonus.add_argument("study", type=int)
        bonus.add_argument("--amount", required=True, help="Per participant, e.g. 1.50 (GBP).")
        self.add_who(bonus, everyone=False)
        bonus.add_argument("--reason", required=True)
        bonus.add_argument("--key", help="Makes a repeated command one payment.")
        bonus.add_argument("--pay", action="store_true", help="Pay it once set up.")
        bonus.add_argument(
            "--again",
            action="store_true",
            help="Pay a participant the same bonus again within 24 hours (refused without it).",
        )
        commands.add_parser("pay").add_argument("bonus", type=int)
        settle = commands.add_parser("settle")
        settle.add_argument("bonus", type=int)
        outcome = settle.add_mutually_exclusive_group(required=True)
        outcome.add_argument("--paid", action="store_true")
        outcome.add_argument("--not-paid", action="store_true")
        message = commands.add_parser("message")
        message.add_argument("study", type=int)
        self.add_who(message, everyone=True)
        message.add_argument("--body", required=True)
        for name in ("approve", "pause", "start", "stop"):
            commands.add_parser(name).add_argument("study", type=int)
        create = commands.add_parser("group-create")
        create.add_argument("name")
        create.add_argument("--kind", choices=ParticipantGroup.Kind.values, required=True)
        add = commands.add_parser("group-add")
        add.add_argument("group")
        source = add.add_mutually_exclusive_group(required=True)
        source.add_argument("--qualified", type=int, metavar="STUDY")
        source.add_argument("--excluded", type=int, metavar="STUDY")
        add.add_argument("--reason", required=True)
        remove = commands.add_parser("group-remove")
        remove.add_argument("group")
        remove.add_argument("--participants", required=True)
        filtered = commands.add_parser("group-filter")
        filtered.add_argument("study", type=int)
        filtered.add_argument("group")

    @staticmethod
    def add_who(parser: CommandParser, everyone: bool) -> None:
        who = parser.add_mutually_exclusive_group(required=True)
        if everyone:
            who.add_argument("--all", action="store_true", help="Every Prolific participant.")
        who.add_argument("--qualified", action="store_true", help="Completed and accepted.")
        who.add_argument("--participants", help="Comma-separated Prolific ids.")

    def handle(self, *args: str, **options: Any) -> None:
        from annotator.errors import StudyError
        from annotator.prolific_api import ProlificError, prolific_client_or_none

        client = prolific_client_or_none()
        if client is None:
            raise CommandError("Set PROLIFIC_API_TOKEN to use Prolific's API.")
        what = options["what"].replace("-", "_")
        try:
            getattr(self, f"do_{what}")(client, options)
        except (StudyError, ProlificError) as error:
            raise CommandError(str(error)) from None

    # -- the subcommands --

    def do_bonus(self, client: ProlificClient, options: dict) -> None:
        from annotator.actions.bonuses import (
            check_pay_bonuses,
            check_record_bonuses,
            check_set_up_bonuses,
        )

        study = self.study(options["study"])
        people = self.who(study, options)
        key = options["key"] or uuid.uuid4().hex
        payment, new = check_record_bonuses(
            study,
            dict.fromkeys(people, options["amount"]),
            options["reason"],
            key,
            again=options["again"],
        )
        if not new:
            self.stdout.write(f"Key {key!r} made bonus {payment.pk} already: nothing new.")
        if payment.status == BonusPayment.Status.DRAFT:
            payment = check_set_up_bonuses(payment, client)
        if options["pay"] and payment.status == BonusPayment.Status.SET_UP:
            payment = check_pay_bonuses(payment, client)
        self.report(payment)

    def do_pay(self, client: ProlificClient, options: dict) -> None:
        from annotator.actions.bonuses import check_pay_bonuses

        self.report(check_pay_bonuses(self.payment(options["bonus"]), client))

    def do_settle(self, client: ProlificClient, options: dict) -> None:
        from annotator.actions.bonuses import check_settle_bonuses

        self.report(check_settle_bonuses(self.payment(options["bonus"]), bool(options["paid"])))

    def do_message(self, client: ProlificClient, options: dict) -> None:
        from annotator.actions.messages import check_message_participants

        study = self.study(options["study"])
        sent = check_message_participants(study, self.who(study, options), options["body"], client)
        self.stdout.write(f"Sent the message to {sent} participant(s) of '{study.name}'.")

    def do_approve(self, client: ProlificClient, options: dict) -> None:
        from annotator.actions.prolific_sync import check_approve_completed

        study = self.study(options["study"])
        count = check_approve_completed(study, client)
        self.stdout.write(f"Approved {count} completed submission(s) of '{study.name}'.")

    def transition(self, client: ProlificClient, options: dict, action: str) -> None:
        from annotator.actions.messages import check_transition_on_prolific

        study = self.study(options["study"])
        check_transition_on_prolific(study, action, client)
        self.stdout.write(f"'{study.name}' on Prolific: {action}.")

    def do_pause(self, client: ProlificClient, options: dict) -> None:
        self.transition(client, options, "PAUSE")

    def do_start(self, client: ProlificClient, options: dict) -> None:
        self.transition(client, options, "START")

    def do_stop(self, client: ProlificClient, options: dict) -> None:
        self.transition(client, options, "STOP")

    def do_group_create(self, client: ProlificClient, options: dict) -> None:
        from annotator.actions.groups import check_create_participant_group

        group = check_create_participant_group(
            options["name"], options["kind"], client, settings.PROLIFIC_WORKSPACE_ID
        )
        self.stdout.write(f"Created the participant group {group} ({group.prolific_id}).")

    def do_group_add(self, client: ProlificClient, options: dict) -> None:
        from annotator.actions.groups import check_add_to_group, excluded_raters, qualified_raters

        group = self.group(options["group"])
        if options["qualified"] is not None:
            people = qualified_raters(self.study(options["qualified"]))
        else:
            people = excluded_raters(self.study(options["excluded"]))
        added = check_add_to_group(group, people, options["reason"], client)
        self.stdout.write(f"Added {added} participant(s) to {group} ({len(people)} chosen).")

    def do_group_remove(self, client: ProlificClient, options: dict) -> None:
        from annotator.actions.groups import check_remove_from_group

        group = self.group(options["group"])
        pids = [p.strip() for p in options["participants"].split(",") if p.strip()]
        removed = check_remove_from_group(group, pids, client)
        self.stdout.write(f"Removed {removed} participant(s) from {group}.")

    def do_group_filter(self, client: ProlificClient, options: dict) -> None:
        from annotator.actions.groups import check_filter_study

        study, group = self.study(options["study"]), self.group(options["group"])
        check_filter_study(study, group)
        self.stdout.write(f"'{study.name}' will be recruited with {group}.")

    # -- lookups --

    @staticmethod
    def study(pk: int) -> Study:
        study = Study.objects.filter(pk=pk).first()
        if study is None:
            raise CommandError(f"No study #{pk}.")
        return study

    @staticmethod
    def payment(pk: int) -> BonusPayment:
        payment = BonusPayment.objects.filter(pk=pk).first()
        if payment is None:
            raise CommandError(f"No bonus payment #{pk}.")
        return payment

    @staticmethod
    def group(name: str) -> ParticipantGroup:
        group = ParticipantGroup.objects.filter(name=name).first()
        if group is None:
            raise CommandError(f"No participant group named {name!r}.")
        return group

    @staticmethod
    def who(study: Study, options: dict) -> list[Participant]:
        from annotator.actions.groups import qualified_raters

        if options.get("qualified"):
            return qualified_raters(study)
        prolific = Participant.objects.filter(study=study).exclude(prolific_pid="")
        if options.get("all"):
            return list(prolific)
        pids = [p.strip() for p in (options.get("participants") or "").split(",") if p.strip()]
        found = {p.prolific_pid: p for p in prolific.filter(prolific_pid__in=pids)}
        missing = [pid for pid in pids if pid not in found]
        if missing:
            raise CommandError(f"Not participants of '{study.name}': {', '.join(missing)}.")
        return [found[pid] for pid in pids]

    def report(self, payment: BonusPayment) -> None:
        total = "" if payment.total_pence is None else f", {payment.total_pence} pence with fees"
        error = f"\n{payment.error}" if payment.error else ""
        self.stdout.write(
            f"Bonus {payment.pk}: {payment.get_status_display()}{total} ({payment.reason}).{error}"
        )
