"""A judge's prices may be blank: blank (null) means not known, 0 means free (a local server: its calls cost 0).

Before, a price of 0 meant "no prices": a call that reported tokens cost nothing known (null, or 0 in older rows).
To keep what is stored meaning what it meant, a judge with both prices 0 gets both blank, and a call stored with cost
0 that reported tokens (not from the call cache, not imported: Judgement.cost_unpriced as it read them) gets cost
null. Going back turns blank prices into 0 again (the judgements' null costs stay null: the older code reads them as
not known too).
"""

from django.db import migrations, models
from django.db.models import Q


def blank_unknown_prices(apps, schema_editor):
    Judge = apps.get_model("judging", "Judge")
    Judgement = apps.get_model("judging", "Judgement")
    Judge.objects.filter(price_input_per_mtok=0, price_output_per_mtok=0).update(
        price_input_per_mtok=None, price_output_per_mtok=None
    )
    Judgement.objects.filter(
        Q(input_tokens__gt=0) | Q(output_tokens__gt=0),
        cost=0, cached=False, input_tokens__isnull=False, output_tokens__isnull=False,
    ).exclude(run__scope="imported").update(cost=None)


def zero_blank_prices(apps, schema_editor):
    Judge = apps.get_model("judging", "Judge")
    Judge.objects.filter(price_input_per_mtok__isnull=True).update(price_input_per_mtok=0.0)
    Judge.objects.filter(price_output_per_mtok__isnull=True).update(price_output_per_mtok=0.0)


class Migration(migrations.Migration):

    dependencies = [
        ("judging", "0009_synthetic_set_queued_at"),
    ]

    operations = [
        migrations.AlterField(
            model_name="judge",
            name="price_input_per_mtok",
            field=models.FloatField(blank=True, default=None, null=True),
        ),
        migrations.AlterField(
            model_name="judge",
            name="price_output_per_mtok",
            field=models.FloatField(blank=True, default=None, null=True),
        ),
        migrations.RunPython(blank_unknown_prices, zero_blank_prices),
    ]
