
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('judging', '0008_judges_shown'),
    ]

    operations = [
        migrations.AddField(
            model_name='syntheticset',
            name='queued_at',
            field=models.DateTimeField(blank=True, null=True),
        ),
    ]
