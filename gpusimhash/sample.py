"""The bundled sample corpus: a few thousand documents with known duplicates and near-duplicates.

``gpusimhash/data/sample_corpus.jsonl.gz`` holds one JSON object per line with the fields

- ``id`` (int), ``text`` (str);
- ``group`` (int): the ground truth, the id of the document's original (an original's own id);
- ``kind``: ``"original"``, ``"exact"`` (identical text) or ``"near"`` (edited copy);
- ``source``: ``"english"`` (sentences built from this module's own templates) or ``"synthetic"``
  (pseudo-words from :mod:`gpusimhash.synth`).

Everything in it is generated here, by code and word lists written for this project, so it may
ship with the package. Rebuild it with ``python -m gpusimhash.sample [PATH]``; the output is the
same for the same seed.
"""

from __future__ import annotations

import random
import re
import sys
from collections import Counter
from importlib import resources
from pathlib import Path

import numpy as np

from gpusimhash import synth
from gpusimhash.writers import RecordWriter

TEXT_FIELD = "text"
ID_FIELD = "id"
TRUTH_FIELD = "group"
SEED = 20240601
MAX_UNRELATED_COSINE = 0.75

_SENTENCES = {
    "software": [
        "{name} is a {quality} {kind} for {task} in {language}.",
        "It {feature} and {feature2}.",
        "Released under the {license} license.",
        "Install {name} with one command and start {task}.",
        "Version {version} {change}.",
        "Bug reports and pull requests are welcome on {forge}.",
    ],
    "recipe": [
        "To make {dish}, {prep} the {ingredient} with {ingredient2}.",
        "Add a pinch of {spice}, then {cook} for {minutes} minutes.",
        "Serve it {serve}.",
        "This {dish} keeps for {days} days in the fridge.",
        "My {relative} taught me this one years ago.",
        "Swap the {ingredient2} for {ingredient3} if you like.",
    ],
    "product": [
        "The {brand} {product} comes in {color}.",
        "Made of {material}.",
        "{benefit}.",
        "Orders ship within {days} days and include {extra}.",
        "Customers rate it {rating} out of five.",
        "Pair it with our {product2} for {use}.",
    ],
    "weather": [
        "{city} expects {weather} on {day}.",
        "Temperatures stay near {degrees} degrees with {wind}.",
        "{advice}.",
        "By {day2} the {front} should bring {weather2}.",
        "The {service} issued a {warning} for the {region}.",
        "Sunrise is at {hour} and sunset at {hour2}.",
    ],
    "review": [
        "We stayed {nights} nights at the {hotel} in {city}.",
        "The {room} was {opinion}.",
        "Breakfast was {opinion2}.",
        "The staff {staff}.",
        "Getting there from the {place} took {minutes} minutes.",
        "{verdict}.",
    ],
    "job": [
        "{company} is hiring a {level} {role} in {city}.",
        "You will {duty}.",
        "Experience with {skill} and {skill2} is {requirement}.",
        "The team {perk}.",
        "Salary starts at {salary} a year.",
        "Apply before {day} with a short note about {topic}.",
    ],
}

_SLOTS = {
    "name": [
        "Quickparse",
        "Tidyframe",
        "Loglens",
        "Mapwise",
        "Fastqueue",
        "Schemaforge",
        "Textkit",
        "Gridstone",
        "Pipewright",
        "Cachebird",
        "Plotline",
        "Tokenmill",
        "Datadrift",
        "Hashnest",
        "Runbook",
        "Clipper",
        "Vectorly",
        "Formfit",
        "Tilecast",
        "Jsonjet",
    ],
    "quality": [
        "small",
        "fast",
        "simple",
        "lightweight",
        "modern",
        "minimal",
        "robust",
        "friendly",
        "typed",
        "pure Python",
    ],
    "kind": ["library", "toolkit", "command line tool", "framework", "package", "helper module"],
    "task": [
        "parsing log files",
        "validating JSON documents",
        "plotting time series",
        "scheduling background jobs",
        "reading spreadsheets",
        "resizing images",
        "sending email",
        "caching HTTP responses",
        "testing web APIs",
        "converting units",
        "tracking experiments",
        "cleaning messy text",
    ],
    "language": ["Python", "Rust", "Go", "JavaScript", "Java", "Ruby", "Julia", "C++"],
    "feature": [
        "needs no dependencies",
        "supports async code",
        "streams large inputs",
        "ships with type hints",
        "runs on every platform",
        "has a plugin system",
        "explains every error",
        "works offline",
    ],
    "feature2": [
        "has a tiny memory footprint",
        "comes with a tutorial",
        "is fully documented",
        "is tested on every release",
        "starts in milliseconds",
        "integrates with pandas",
    ],
    "license": ["MIT", "Apache 2.0", "BSD", "MPL", "ISC"],
    "dish": [
        "lemon rice",
        "tomato soup",
        "garlic noodles",
        "bean stew",
        "spinach pie",
        "mushroom risotto",
        "pancakes",
        "lentil curry",
        "roasted carrots",
        "corn bread",
    ],
    "prep": ["mix", "toss", "stir", "combine", "whisk", "fold"],
    "ingredient": [
        "rice",
        "tomatoes",
        "noodles",
        "beans",
        "spinach",
        "flour",
        "lentils",
        "carrots",
    ],
    "ingredient2": ["olive oil", "butter", "yogurt", "stock", "cream", "honey", "lemon juice"],
    "spice": ["salt", "cumin", "pepper", "paprika", "nutmeg", "chili", "thyme"],
    "cook": ["simmer", "bake", "roast", "fry gently", "steam", "grill"],
    "minutes": ["10", "15", "20", "25", "30", "40", "45"],
    "serve": [
        "warm with bread",
        "with fresh herbs",
        "straight away",
        "with a green salad",
        "cold the next day",
        "with lime wedges",
    ],
    "brand": ["Northwind", "Bluepeak", "Oakline", "Sunhaven", "Ironleaf", "Riverstone", "Kestrel"],
    "product": [
        "backpack",
        "desk lamp",
        "water bottle",
        "rain jacket",
        "office chair",
        "kettle",
        "notebook",
        "wool scarf",
        "bike light",
        "travel mug",
    ],
    "color": ["black", "forest green", "navy blue", "sand", "red", "grey", "white"],
    "material": [
        "recycled plastic",
        "stainless steel",
        "organic cotton",
        "oak wood",
        "aluminium",
        "merino wool",
        "bamboo",
    ],
    "benefit": [
        "It is light enough to carry all day",
        "It survives drops and rain",
        "It cleans up with a damp cloth",
        "It folds flat for storage",
        "It keeps drinks hot for hours",
        "It comes with a two year warranty",
    ],
    "days": ["2", "3", "5", "7", "10"],
    "extra": [
        "a spare strap",
        "free returns",
        "a gift box",
        "a cleaning cloth",
        "printed instructions",
    ],
    "city": [
        "Lisbon",
        "Oslo",
        "Denver",
        "Nairobi",
        "Osaka",
        "Toronto",
        "Dublin",
        "Perth",
        "Santiago",
        "Krakow",
    ],
    "weather": [
        "heavy rain",
        "clear skies",
        "light snow",
        "scattered showers",
        "thick fog",
        "thunderstorms",
        "bright sunshine",
    ],
    "day": ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"],
    "degrees": ["minus 3", "4", "11", "17", "22", "28", "33"],
    "wind": [
        "strong winds from the north",
        "a gentle breeze",
        "gusts along the coast",
        "almost no wind",
        "winds easing by evening",
    ],
    "advice": [
        "Take an umbrella if you go out",
        "Roads may be slippery in the morning",
        "It is a good day for a long walk",
        "Drivers should allow extra time",
        "Drink plenty of water",
        "Expect delays at the airport",
    ],
    "nights": ["two", "three", "four", "five", "six"],
    "hotel": [
        "Harbor Inn",
        "Grand Palace",
        "Old Mill Hotel",
        "Cedar Lodge",
        "Station House",
        "Garden Court",
        "Blue Door Hostel",
    ],
    "room": ["room", "bathroom", "bed", "view", "balcony", "pool"],
    "opinion": [
        "spotless",
        "a bit small",
        "noisy at night",
        "better than the photos",
        "cold",
        "huge and bright",
        "tired and dated",
    ],
    "opinion2": [
        "excellent",
        "disappointing",
        "generous",
        "overpriced",
        "fresh and varied",
        "plain",
    ],
    "staff": [
        "could not have been kinder",
        "ignored our requests",
        "spoke four languages",
        "helped us book a tour",
        "were slow at check in",
        "remembered our names",
    ],
    "company": [
        "Brightpath",
        "Copperfield Labs",
        "Meridian Health",
        "Atlas Freight",
        "Greenfield Bank",
        "Solstice Games",
        "Harbor Analytics",
    ],
    "level": ["junior", "senior", "lead", "principal", "part time", "contract"],
    "role": [
        "data engineer",
        "nurse",
        "accountant",
        "product designer",
        "truck driver",
        "backend developer",
        "sales manager",
        "research scientist",
    ],
    "duty": [
        "build our reporting pipeline",
        "care for patients on the night shift",
        "close the books every month",
        "design the mobile app",
        "plan delivery routes",
        "scale our payment service",
        "grow our accounts in Europe",
        "run field experiments",
    ],
    "skill": ["SQL", "Kubernetes", "Excel", "Figma", "spreadsheets", "Python", "negotiation"],
    "skill2": ["Airflow", "patient records", "audits", "user research", "logistics", "Go"],
    "requirement": ["required", "a plus", "expected", "nice to have", "essential"],
    "perk": [
        "works four days a week",
        "meets in person once a month",
        "offers a learning budget",
        "is fully remote",
        "shares lunch every Friday",
    ],
    "version": ["1.0", "2.3", "0.9", "3.1", "4.0", "1.7"],
    "change": [
        "drops support for old releases",
        "adds a dark mode",
        "is twice as fast",
        "fixes a memory leak",
        "renames the main entry point",
        "brings Windows support",
    ],
    "forge": ["GitHub", "GitLab", "Codeberg", "the mailing list", "SourceHut"],
    "relative": ["grandmother", "uncle", "neighbour", "aunt", "father", "flatmate"],
    "ingredient3": ["coconut milk", "sour cream", "maple syrup", "vinegar", "soy sauce"],
    "rating": ["4.8", "4.2", "3.9", "4.5", "3.1"],
    "product2": ["travel pouch", "charging cable", "laptop sleeve", "tea infuser", "rain cover"],
    "use": ["weekend trips", "the daily commute", "long hikes", "working from home", "camping"],
    "day2": ["the weekend", "Wednesday night", "early next week", "Friday morning"],
    "front": ["cold front", "warm air", "storm system", "high pressure ridge"],
    "weather2": ["calmer weather", "more rain", "a sharp frost", "a heat wave", "dry air"],
    "service": ["weather office", "coast guard", "national forecaster", "city council"],
    "warning": ["flood warning", "wind advisory", "frost alert", "heat warning", "fog notice"],
    "region": ["northern valleys", "coast", "mountain passes", "city centre", "islands"],
    "hour": ["5:48", "6:15", "7:02", "7:40", "8:11"],
    "hour2": ["16:30", "17:55", "19:12", "20:47", "21:20"],
    "place": ["airport", "train station", "old town", "ferry terminal", "motorway"],
    "verdict": [
        "We would happily come back",
        "Not worth the price",
        "Perfect for a short break",
        "Fine for one night but no more",
        "Book a room facing the garden",
    ],
    "salary": ["40,000", "55,000", "72,000", "90,000", "120,000"],
    "topic": [
        "a project you are proud of",
        "why you want the job",
        "your favourite tool",
        "a hard problem you solved",
        "how you like to work",
    ],
}

_SYNONYMS = {
    "small": "tiny",
    "fast": "quick",
    "simple": "easy",
    "library": "module",
    "tool": "utility",
    "supports": "handles",
    "needs": "requires",
    "mix": "blend",
    "serve": "plate",
    "warm": "hot",
    "comes": "arrives",
    "made": "built",
    "light": "lightweight",
    "expects": "will see",
    "near": "around",
    "stayed": "spent",
    "staff": "team",
    "hiring": "looking for",
    "experience": "familiarity",
    "team": "group",
    "released": "published",
    "minutes": "mins",
    "orders": "purchases",
    "breakfast": "morning buffet",
    "strong": "powerful",
}

_ADDITIONS = [
    "Updated for this year.",
    "Read the full details online.",
    "Limited offer.",
    "Thanks for reading.",
    "More to follow soon.",
    "(edited)",
    "Posted by the editors.",
    "Reviews welcome.",
]


def english_original(rng: random.Random) -> str:
    """Write four sentences on one topic, with random slot values.

    Parameters
    ----------
    rng : random.Random
        Source of the choices.

    Returns
    -------
    str
        An English document of four sentences.
    """
    sentences = rng.sample(_SENTENCES[rng.choice(sorted(_SENTENCES))], 4)
    values = {slot: rng.choice(options) for slot, options in _SLOTS.items()}
    return " ".join(sentences).format(**values)


def english_variant(text: str, rng: random.Random) -> str:
    """Edit a document lightly, as people re-post: synonyms, a dropped word, a typo, an addition.

    Parameters
    ----------
    text : str
        The original.
    rng : random.Random
        Source of the choices.

    Returns
    -------
    str
        One to three edits of ``text``, never ``text`` itself.
    """
    words = text.split(" ")
    for _ in range(rng.randint(1, 3)):
        edit = rng.randrange(5)
        swappable = [i for i, w in enumerate(words) if w.lower().strip(".,") in _SYNONYMS]
        if edit == 0 and swappable:
            i = rng.choice(swappable)
            core = words[i].strip(".,")
            words[i] = words[i].replace(core, _SYNONYMS[core.lower()])
        elif edit == 1 and len(words) > 8:
            del words[rng.randrange(len(words))]
        elif edit == 2:
            i = rng.randrange(len(words))
            letters = list(words[i])
            if len(letters) > 3:
                j = rng.randrange(len(letters) - 1)
                letters[j], letters[j + 1] = letters[j + 1], letters[j]
                words[i] = "".join(letters)
        elif edit == 3:
            words.append(rng.choice(_ADDITIONS))
        else:
            words = [w.lower() if rng.random() < 0.5 else w for w in words]
    variant = " ".join(words)
    return variant if variant != text else variant + " " + rng.choice(_ADDITIONS)


class _Novelty:
    """Word-count cosine of a text against every original kept so far."""

    def __init__(self) -> None:
        self.columns: dict[str, int] = {}
        self.rows = np.zeros((0, 0))

    def vector(self, text: str) -> np.ndarray:
        """Return the text's unit word-count vector, adding columns for new words."""
        counts = Counter(re.findall(r"\w+", text.lower()))
        for word in counts:
            self.columns.setdefault(word, len(self.columns))
        if len(self.columns) > self.rows.shape[1]:
            self.rows = np.pad(self.rows, ((0, 0), (0, len(self.columns) - self.rows.shape[1])))
        vector = np.zeros(self.rows.shape[1])
        for word, count in counts.items():
            vector[self.columns[word]] = count
        return vector / np.linalg.norm(vector)

    def closest(self, vector: np.ndarray) -> float:
        """Return the largest cosine with a kept original (0 when there is none)."""
        return float((self.rows @ vector).max()) if self.rows.shape[0] else 0.0

    def keep(self, vector: np.ndarray) -> None:
        """Remember an original."""
        self.rows = np.vstack([self.rows, vector])


def _english_documents(n_docs: int, rng: random.Random):
    """Yield ``(text, group, kind)`` with group as a position in this list.

    A new original is redrawn until its word-count cosine with every earlier original is below
    ``MAX_UNRELATED_COSINE``, so that documents in different groups are truly unrelated.
    """
    texts: list[str] = []
    originals: list[int] = []
    novelty = _Novelty()
    for position in range(n_docs):
        roll = rng.random()
        if originals and roll < 0.08:
            group = rng.choice(originals)
            text, kind = texts[group], "exact"
        elif originals and roll < 0.33:
            group = rng.choice(originals)
            text, kind = english_variant(texts[group], rng), "near"
        else:
            group, kind = position, "original"
            while True:
                text = english_original(rng)
                vector = novelty.vector(text)
                if novelty.closest(vector) < MAX_UNRELATED_COSINE:
                    break
            novelty.keep(vector)
            originals.append(position)
        texts.append(text)
        yield text, group, kind


def build_sample(path: str | Path, *, n_english: int = 2000, n_synthetic: int = 1500) -> int:
    """Write the sample corpus: English template documents and a synthetic corpus, shuffled.

    Parameters
    ----------
    path : str or Path
        Destination (``.jsonl.gz``).
    n_english, n_synthetic : int
        How many documents of each source.

    Returns
    -------
    int
        Number of documents written.
    """
    rng = random.Random(SEED)
    docs = [(t, g, k, "english") for t, g, k in _english_documents(n_english, rng)]
    spec = synth.CorpusSpec(
        n_docs=n_synthetic,
        seed=SEED,
        vocabulary_size=5000,
        zipf_exponent=0.8,
        min_length=15,
        max_length=40,
        exact_rate=0.08,
        near_rate=0.25,
        edit_rates=(0.05, 0.1, 0.2),
    )
    docs += [(d.text, n_english + d.group, d.kind, "synthetic") for d in synth.generate(spec)]
    order = list(range(len(docs)))
    rng.shuffle(order)
    new_id = {old: new for new, old in enumerate(order)}
    records = []
    for new, old in enumerate(order):
        text, group, kind, source = docs[old]
        records.append(
            {"id": new, "text": text, "group": new_id[group], "kind": kind, "source": source}
        )
    with RecordWriter(path) as writer:
        writer.write(records)
    return len(records)


def sample_corpus_path() -> Path:
    """Return the path of the bundled sample corpus.

    Returns
    -------
    Path
        ``gpusimhash/data/sample_corpus.jsonl.gz`` inside the installed package.

    Examples
    --------
    >>> sample_corpus_path().name
    'sample_corpus.jsonl.gz'
    """
    return Path(str(resources.files("gpusimhash") / "data" / "sample_corpus.jsonl.gz"))


if __name__ == "__main__":
    target = sys.argv[1] if len(sys.argv) > 1 else sample_corpus_path()
    print(f"wrote {build_sample(target)} documents to {target}")
