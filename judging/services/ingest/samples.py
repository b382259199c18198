"""Finding the sample a judgement line names, by external id (and batch) or by its two texts."""

from __future__ import annotations

from collections import defaultdict

from annotate.models import Project, Sample
from annotate.services.ingest.checks import ImportFailed


class SampleFinder:
    """Samples of the project by external id (and batch) or by their two texts, looked up once per import."""

    def __init__(self, project: Project) -> None:
        self.project = project
        self._by_external_id: dict[str, list[tuple[int, str]]] | None = None
        self._by_texts: dict[tuple[str, str], list[tuple[int, str]]] | None = None

    def by_external_id(self, external_id: str, batch: str | None, where: str) -> int:
        if self._by_external_id is None:
            self._by_external_id = defaultdict(list)
            rows = Sample.objects.filter(project=self.project).values_list("external_id", "pk", "batch__name")
            for key, pk, batch_name in rows.iterator(chunk_size=5000):
                self._by_external_id[key].append((pk, batch_name))
        found = self._by_external_id.get(external_id, [])
        return self._one(found, batch, where, f"with external id {external_id!r}", "field 'batch'")

    def by_texts(self, source: str, output: str, batch: str | None, where: str) -> int:
        if self._by_texts is None:
            self._by_texts = defaultdict(list)
            rows = Sample.objects.filter(project=self.project).values_list("passage__text", "summary", "pk", "batch__name")
            for passage_text, summary, pk, batch_name in rows.iterator(chunk_size=2000):
                self._by_texts[(passage_text, summary)].append((pk, batch_name))
        found = self._by_texts.get((source, output), [])
        return self._one(found, batch, where, "whose passage text and summary equal fields 'source' and 'output'",
                         "field 'batch'")

    def _one(self, found: list[tuple[int, str]], batch: str | None, where: str, described: str, hint: str) -> int:
        slug = self.project.slug
        if batch is not None:
            in_batch = [pk for pk, name in found if name == batch]
            if not in_batch:
                if found:
                    raise ImportFailed(f"{where}: no sample {described} in batch {batch!r} of project {slug!r}")
                raise ImportFailed(f"{where}: no sample {described} in project {slug!r}")
            found = [(pk, batch) for pk in in_batch]
        if not found:
            raise ImportFailed(f"{where}: no sample {described} in project {slug!r}")
        if len(found) > 1:
            batches = sorted({name for _, name in found})
            shown = ", ".join(repr(name) for name in batches[:5]) + (", ..." if len(batches) > 5 else "")
            raise ImportFailed(
                f"{where}: {len(found)} samples {described} in project {slug!r} (batches {shown}); "
                f"name the batch with {hint}"
            )
        return found[0][0]
