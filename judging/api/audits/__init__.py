"""The audit queue's API (the project's auditors and admins): the next flagged output with every judge's answer,
and the auditor's verdict on it.

Same rules as the audit page (judging.services.audits serves and records for both): outsiders 404, annotators
403 (they work blind and never see judges), anonymous callers 401; a pairs project 400 on ``project`` to its
members (judging.api.lookups). The API has no blind mode: a client that wants its auditor's own score first
simply asks for it before showing ``judges``. A verdict sent here still takes the score its auditor gave blind on
the page before the judges were shown (``blind_score``, kept in the database), if they gave one.

An item is answered once (POST; a second verdict is 409, the same verdict sent again a retry answered 200 with the
saved one, nothing changed); the auditor reads their own saved verdict with GET on the audit
and changes it afterwards (the page's ``u``) with PUT (the whole verdict: every field required) or PATCH (the
fields sent), never another auditor's (403). A change keeps ``answered_at`` and ``seconds`` from the first answer
and sets ``changed_at``.

Split by topic: ``queue`` (the next item and the first verdict on it), ``saved`` (reading and changing one's own
saved verdict), ``serializers`` (the serializers, which are the OpenAPI schema) and ``responses`` (the saved
verdict and a refusal as both topics answer them). ``urlpatterns`` gathers the topics' for judging.api.urls.
"""

from __future__ import annotations

from judging.api.audits import queue, saved

urlpatterns = [*queue.urlpatterns, *saved.urlpatterns]
