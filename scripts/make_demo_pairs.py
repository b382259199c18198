"""Write fixtures/demo_pairs.jsonl (pair format) and fixtures/demo_pair_judgements.jsonl (run from the repository root)."""
import json
import random

# (original, [(old, new, truth)]) — made-up texts written for the FaithLab demo.
TEXTS = [
 ("Calder Street Bridge is a road bridge over the River Morrow. It was finished in 1911. "
  "The bridge carries two lanes of traffic and a footpath on its western side. "
  "Engineer Ruth Allard designed its three stone arches.",
  [("footpath", "walkway", "N"), ("western", "eastern", "H"), ("Ruth Allard", "Owen Pike", "H")]),
 ("Priya Okafor is a civil engineer in Morrowfield. She studied at the University of Leeds. "
  "In 2024 she led the restoration of the town hall clock tower. "
  "The work took fourteen months and reopened the tower to visitors.",
  [("2024", "2019", "H"), ("restoration", "repair", "N"), ("fourteen", "six", "H")]),
 ("The Lintown ferry links the harbour with Gull Island. It has run since 1963. "
  "Two boats make the crossing every forty minutes in summer. "
  "In winter the service stops after dark because of fog.",
  [("forty", "twenty", "H"), ("summer", "daylight", "H"), ("fog", "violin", "H")]),
 ("Hollin Wood is a nature reserve north of Aldmere. It covers about 90 hectares. "
  "Its oldest oaks are thought to be over 400 years old. "
  "Volunteers count the reserve's dormice every September.",
  [("oldest", "largest", "H"), ("thought", "believed", "N"), ("September", "April", "H")]),
 ("The Aldmere Museum opened in a former wool warehouse. Its collection covers local trades. "
  "The museum's curator, Tomas Reyes, added a gallery of weaving looms in 2018. "
  "Entry is free for children under twelve.",
  [("Tomas Reyes", "Helen Voss", "H"), ("gallery", "room", "N"), ("twelve", "sixteen", "H")]),
 ("Marren Point lighthouse stands on a cliff above the bay. Its light was first lit in 1874. "
  "The keepers left in 1989 when the light became automatic. "
  "Today the keepers' cottage is a small cafe.",
  [("1989", "1995", "H"), ("automatic", "electric", "H"), ("small", "little", "N")]),
 ("The Brindle Valley railway closed to passengers in 1966. A heritage group bought the line later. "
  "Steam trains now run on weekends between Brindle and Ashcombe. "
  "The trip takes about fifty minutes each way.",
  [("weekends", "Sundays", "H"), ("Ashcombe", "Holt", "H"), ("about", "roughly", "N")]),
 ("Greyfold Market is held in the square every Thursday. Farmers from the valley sell cheese and bread. "
  "The market began in medieval times under a royal charter. "
  "Its busiest day of the year is the week before Christmas.",
  [("Thursday", "Monday", "H"), ("royal", "blue", "H"), ("busiest", "fullest", "N")]),
 ("Nadia Brenner wrote three novels about life on the coast. Her first book appeared in 2009. "
  "Critics praised its quiet style and careful dialogue. "
  "She now teaches writing at a college in Harwick.",
  [("quiet", "calm", "N"), ("dialogue", "pumpkin", "H"), ("Harwick", "Dunmore", "H")]),
 ("The Tarrow reservoir supplies water to four towns. It was filled in 1958. "
  "A dam of earth and clay holds back the water at its southern end. "
  "Sailing is allowed from May to October.",
  [("earth", "steel", "H"), ("southern", "northern", "H"), ("allowed", "permitted", "N")]),
 ("Ellis Park hosts the county athletics meeting each June. The track was rebuilt in 2015. "
  "About three thousand people watched last year's finals. "
  "The park also has tennis courts and a bowling green.",
  [("three", "ten", "H"), ("finals", "races", "N"), ("tennis", "squash", "H")]),
 ("The Ormond Choir was founded by teachers in 1921. It sings at the cathedral at Easter. "
  "Its director, Agnes Moll, has led it for eleven years. "
  "New singers join after a short audition in autumn.",
  [("Agnes Moll", "Carl Brandt", "H"), ("eleven", "eleventh", "H"), ("short", "brief", "N")]),
]
# A second perturbed version of each text: more items for the pool, so the round-2 funnel has work.
SECOND = [
 [("road", "rail", "H"), ("two", "four", "H"), ("designed", "drew up", "N")],
 [("civil", "marine", "H"), ("led", "directed", "N"), ("visitors", "pigeons", "H")],
 [("harbour", "port", "N"), ("every", "most", "H"), ("after dark", "at noon", "H")],
 [("north", "south", "H"), ("Volunteers", "Helpers", "N"), ("dormice", "parliament", "H")],
 [("wool", "grain", "H"), ("added", "opened", "N"), ("children", "adults", "H")],
 [("cliff", "rock", "N"), ("keepers", "owners", "H"), ("cafe", "bakery", "H")],
 [("heritage", "local", "N"), ("Steam", "Diesel", "H"), ("fifty", "ninety", "H")],
 [("square", "plaza", "N"), ("cheese", "carpets", "H"), ("Christmas", "Easter", "H")],
 [("three", "five", "H"), ("life", "living", "N"), ("college", "hospital", "H")],
 [("four", "seven", "H"), ("holds back", "restrains", "N"), ("October", "sideways", "H")],
 [("county", "national", "H"), ("watched", "saw", "N"), ("bowling green", "skate park", "H")],
 [("teachers", "miners", "H"), ("sings", "performs", "N"), ("autumn", "spring", "H")],
]
TEXTS = [(original, swaps) for original, swaps in TEXTS] + [
    (original, second) for (original, _), second in zip(TEXTS, SECOND, strict=False)
]
rows, votes = [], []
rng = random.Random(7)
index = 0
for t, (original, swaps) in enumerate(TEXTS):
    perturbed = original
    shift = 0
    spans = []
    for old, new, truth in swaps:
        o = original.index(old)
        p = o + shift
        assert perturbed[p:p+len(old)] == old
        perturbed = perturbed[:p] + new + perturbed[p+len(old):]
        spans.append((o, o+len(old), p, p+len(new), old, new, truth))
        shift += len(new) - len(old)
    for o0, o1, p0, p1, old, new, truth in spans:
        assert original[o0:o1] == old and perturbed[p0:p1] == new
        index += 1
        item_id = f"demo-{index:02d}"
        rows.append({"item_id": item_id, "group": f"text-{t+1:02d}", "original_id": f"original-{t % 12 + 1:02d}", "original": original, "perturbed": perturbed,
                     "original_start": o0, "original_end": o1, "perturbed_start": p0, "perturbed_end": p1,
                     "original_words": old, "perturbed_words": new, "metadata": {"topic": "demo"}})
        # Judged by by carol, dave and erin (honest; erin errs now and then) and frank (always H, fast).
        if True:  # votes for every item; the demo applies them to the first 26 items round 1 draws
            other = "N" if truth == "H" else "H"
            honest = {"carol": truth, "dave": truth if index % 7 else other, "erin": truth if index % 9 else other}
            for judge, label in honest.items():
                votes.append({"item_id": item_id, "judge": judge, "label": label, "seconds": round(rng.uniform(9, 30), 1)})
            votes.append({"item_id": item_id, "judge": "frank", "label": "H", "seconds": round(rng.uniform(1.5, 4), 1)})
with open("fixtures/demo_pairs.jsonl", "w") as f:
    for row in rows:
        f.write(json.dumps(row, ensure_ascii=False) + "\n")
with open("fixtures/demo_pair_judgements.jsonl", "w") as f:
    for vote in votes:
        f.write(json.dumps(vote) + "\n")
print(len(rows), "items", len(votes), "votes")
