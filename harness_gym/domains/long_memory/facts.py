"""Fact kinds of the long-memory domain: the sentences that introduce, update and mimic a user fact.

A fact kind is a personal fact about the user that chat sessions introduce and later update (home city,
employer, pet, ...). Each kind carries the first-person sentences the user says when the fact is stated or
changed (``intro`` / ``update``), third-person sentences about other people (distractors), near-misses
(the user considered a value but did not adopt it), passing mentions of the current value, and the
question phrasings per question form.

The train and eval kinds are disjoint (``TRAIN_KINDS`` / ``EVAL_KINDS``), so held-out tasks ask about
other facts, with other values, distractor sentences and question wordings than the training tasks.

``statement_patterns`` turns the intro/update sentences into regular expressions: a harness CHECK uses
them to read which value a retrieved session states for the user (a real text check on session text
it gathered), and the generator uses them to make sure no other sentence reads as a statement.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache, lru_cache


@dataclass(frozen=True)
class FactKind:
    """One kind of user fact and every sentence family the generator writes about it."""

    name: str
    noun: str
    """How check messages name the fact (``home city``)."""
    values: tuple[str, ...]
    intro: tuple[str, ...]
    """First-person sentences stating the fact (``{v}`` = value)."""
    update: tuple[str, ...]
    """First-person sentences changing the fact (``{v}`` = new value, optional ``{old}``)."""
    other: tuple[str, ...]
    """Sentences about another person's value (``{rel}``, ``{name}``, ``{v}``)."""
    near_miss: tuple[str, ...]
    """The user considered ``{v}`` but did not adopt it."""
    mention: tuple[str, ...]
    """A passing mention of the user's current value that does not state or change the fact."""
    requests: tuple[str, ...]
    """What the user asks the assistant right after stating the fact."""
    replies: tuple[str, ...]
    """Assistant answers to those requests (never name a value)."""
    questions: dict[str, tuple[str, ...]]
    """Question phrasings per form: ``current``, ``previous`` and ``as_of`` (with ``{date}``)."""


CITY = FactKind(
    name="city",
    noun="home city",
    values=(
        "Lisbon", "Valencia", "Seville", "Bologna", "Verona", "Leipzig", "Dresden", "Utrecht", "Antwerp",
        "Gothenburg", "Tampere", "Bordeaux", "Toulouse", "Edinburgh", "Galway", "Ljubljana", "Salzburg",
        "Wroclaw", "Tallinn", "Aberdeen",
    ),
    intro=(
        "I live in {v}, so the trams are my lifeline.",
        "I've been living in {v} for a few years now.",
        "Since I'm based in {v}, I cycle almost everywhere.",
    ),
    update=(
        "Big news: I moved from {old} to {v} last week!",
        "I've just relocated to {v}, and the flat is still full of boxes.",
        "We finally finished the move, so I live in {v} now.",
    ),
    other=(
        "My {rel} {name} just moved to {v} for a new job.",
        "{name}, my {rel}, lives in {v} and keeps inviting me over.",
        "My {rel} {name} is flat-hunting in {v} at the moment.",
    ),
    near_miss=(
        "I looked at a couple of flats in {v}, but in the end we decided not to move.",
        "For a while I thought about moving to {v}, but it isn't happening.",
    ),
    mention=(
        "The weather in {v} has been grey all week.",
        "There's a street food festival in {v} this weekend.",
    ),
    requests=(
        "Can you suggest a few things to do nearby this weekend?",
        "Any tips for finding a good doctor in a new neighbourhood?",
        "How do I set up a tidy routine for recycling and bins?",
    ),
    replies=(
        "Here are some ideas: a walking tour of the old town, a local market and a late-opening museum.",
        "Ask neighbours for recommendations, check the local health authority's list and book a first visit.",
        "Set up two labelled bins, check the collection calendar and keep a small caddy for food waste.",
    ),
    questions={
        "current": (
            "Which city does the user live in now?",
            "In what city is the user currently living?",
        ),
        "previous": (
            "Which city did the user live in before their most recent move?",
            "Before the user's latest relocation, in which city did they live?",
        ),
        "as_of": (
            "Which city was the user living in as of {date}?",
            "On {date}, in which city did the user live?",
        ),
    },
)  # fmt: skip

EMPLOYER = FactKind(
    name="employer",
    noun="employer",
    values=(
        "Northwind Logistics", "Bluepeak Analytics", "Larkspur Health", "Quillon Press", "Brightwell Energy",
        "Copperleaf Games", "Stonebridge Bank", "Harbor & Finch", "Meridian Robotics", "Tidewater Foods",
        "Oakhollow Studios", "Vantage Biotech", "Silverline Rail", "Ferncastle Insurance", "Lumen Labs",
        "Redwood Outdoor", "Kestrel Aviation", "Palisade Software",
    ),
    intro=(
        "I work at {v} as a data analyst.",
        "I'm on the product team at {v}.",
        "My job at {v} keeps me very busy these days.",
    ),
    update=(
        "I accepted an offer and started at {v} on Monday.",
        "I left {old} and joined {v} this month.",
        "Update on the job front: I now work for {v}.",
    ),
    other=(
        "My {rel} {name} just got hired by {v}.",
        "{name}, my {rel}, has worked at {v} for ages.",
        "My {rel} {name} has an interview at {v} next week.",
    ),
    near_miss=(
        "I had an interview at {v}, but I turned the offer down.",
        "A recruiter from {v} reached out, but I'm not switching jobs.",
    ),
    mention=(
        "We have an all-hands at {v} tomorrow and I still need slides.",
        "The canteen at {v} finally has decent vegetarian options.",
    ),
    requests=(
        "Could you help me plan my first month so I make a good impression?",
        "How should I structure a weekly update email to my manager?",
        "What's a good way to keep work from eating my evenings?",
    ),
    replies=(
        "Meet your key colleagues early, write down open questions and agree on goals for the first month.",
        "Use three short sections: what got done, what is next, and where you need a decision.",
        "Set a fixed finishing time, mute notifications after it and plan the next day before logging off.",
    ),
    questions={
        "current": (
            "Which company does the user work for now?",
            "Who is the user's current employer?",
        ),
        "previous": (
            "Which company did the user work for before their latest job change?",
            "Before the user's most recent job move, who employed them?",
        ),
        "as_of": (
            "Which company was the user working for as of {date}?",
            "On {date}, who was the user's employer?",
        ),
    },
)  # fmt: skip

PET = FactKind(
    name="pet",
    noun="pet",
    values=(
        "Biscuit", "Pepper", "Mochi", "Waffles", "Ziggy", "Clementine", "Noodle", "Pickles", "Marmalade",
        "Otto", "Tofu", "Luna", "Hazel", "Sprout", "Rocket", "Bramble", "Pixel", "Dumpling", "Fudge", "Comet",
    ),
    intro=(
        "We adopted a rescue dog called {v}.",
        "My dog is called {v} and he is a handful.",
        "I have a cat named {v} who sleeps on my keyboard.",
    ),
    update=(
        "After we lost {old}, we adopted a new puppy named {v}.",
        "We have a new pet now, a kitten called {v}.",
        "Our new dog, {v}, arrived from the shelter yesterday.",
    ),
    other=(
        "My {rel} {name} just got a puppy called {v}.",
        "{name}, my {rel}, has a cat named {v}.",
        "My {rel} {name} is pet-sitting a dog called {v} this week.",
    ),
    near_miss=(
        "We nearly adopted a dog called {v}, but the shelter matched him with another family.",
        "I was going to name a kitten {v}, but we didn't get one in the end.",
    ),
    mention=(
        "{v} chewed through another charging cable today.",
        "I took {v} to the vet for a check-up this morning.",
    ),
    requests=(
        "What should I buy for the first week?",
        "How do I get a pet used to being alone for a few hours?",
        "Any advice on pet insurance?",
    ),
    replies=(
        "Start with food and bowls, a bed, a few toys, a lead or carrier, and book a vet check-up.",
        "Build up slowly: leave for a few minutes, then longer, and keep departures calm and boring.",
        "Compare lifetime cover with annual cover, check the excess and read the exclusions carefully.",
    ),
    questions={
        "current": (
            "What is the name of the user's current pet?",
            "What is the user's pet called now?",
        ),
        "previous": (
            "What was the name of the user's pet before the most recent one?",
            "Before their newest pet arrived, what was the user's pet called?",
        ),
        "as_of": (
            "What was the user's pet called as of {date}?",
            "On {date}, what was the name of the user's pet?",
        ),
    },
)  # fmt: skip

CUISINE = FactKind(
    name="cuisine",
    noun="favourite cuisine",
    values=(
        "Thai", "Ethiopian", "Georgian", "Peruvian", "Lebanese", "Vietnamese", "Sicilian", "Oaxacan",
        "Keralan", "Basque", "Malaysian", "Moroccan", "Persian", "Sichuan", "Cantonese", "Neapolitan",
        "Catalan", "Burmese",
    ),
    intro=(
        "My favourite food is {v}, I could eat it every day.",
        "I'm a huge fan of {v} cooking, it's my go-to.",
        "Honestly, {v} food is my favourite.",
    ),
    update=(
        "My tastes have changed: these days I prefer {v} food.",
        "I've gone off {old} a bit; my new favourite is {v}.",
        "Lately {v} cuisine has become my absolute favourite.",
    ),
    other=(
        "My {rel} {name} is obsessed with {v} food.",
        "{name}, my {rel}, only ever wants {v} for dinner.",
        "My {rel} {name} just took a {v} cooking class.",
    ),
    near_miss=(
        "I tried a {v} place last night, but it didn't win me over.",
        "People keep telling me to try {v} food, but I'm not convinced.",
    ),
    mention=(
        "We ordered {v} again on Friday.",
        "There's a new {v} restaurant near the station.",
    ),
    requests=(
        "Can you give me a shopping list for cooking it at home?",
        "What should I order for a group of six?",
        "Any tips for cooking it on a weeknight?",
    ),
    replies=(
        "Stock up on the core spices, a good rice, fresh herbs, and plan two simple dishes to start.",
        "Order a mix of shared starters, two mains, a vegetable side and something mild for cautious eaters.",
        "Prep sauces at the weekend, keep frozen herbs handy and pick dishes with one pan.",
    ),
    questions={
        "current": (
            "What is the user's favourite cuisine now?",
            "Which cuisine does the user currently like best?",
        ),
        "previous": (
            "Which cuisine did the user prefer before their tastes changed most recently?",
            "Before their latest change of taste, what was the user's favourite cuisine?",
        ),
        "as_of": (
            "What was the user's favourite cuisine as of {date}?",
            "On {date}, which cuisine did the user like best?",
        ),
    },
)  # fmt: skip

INSTRUMENT = FactKind(
    name="instrument",
    noun="instrument",
    values=(
        "piano", "violin", "cello", "ukulele", "saxophone", "trumpet", "flute", "clarinet", "banjo", "harp",
        "mandolin", "accordion", "trombone", "oboe", "bassoon", "viola",
    ),
    intro=(
        "I'm learning the {v} in the evenings.",
        "I started {v} lessons a few months ago.",
        "I practise the {v} for half an hour every day.",
    ),
    update=(
        "I've switched instruments and now I'm learning the {v}.",
        "I gave up the {old} and took up the {v}.",
        "My new teacher has me on the {v} now.",
    ),
    other=(
        "My {rel} {name} plays the {v} in a local orchestra.",
        "{name}, my {rel}, just bought a second-hand {v}.",
        "My {rel} {name} is teaching themselves the {v}.",
    ),
    near_miss=(
        "I rented a {v} for a weekend, but it wasn't for me.",
        "My teacher suggested the {v}, but I'm sticking with what I have.",
    ),
    mention=(
        "The {v} sheet music I ordered finally arrived.",
        "I recorded myself playing the {v} and it sounded terrible.",
    ),
    requests=(
        "How should I structure my practice sessions?",
        "Can you suggest a few beginner pieces?",
        "How do I stay motivated when progress feels slow?",
    ),
    replies=(
        "Warm up for five minutes, work on one technique, then play a piece you enjoy to finish.",
        "Pick short pieces with a clear melody and slow them down until you can play them cleanly.",
        "Record yourself monthly, set small goals and play for friends now and then.",
    ),
    questions={
        "current": (
            "Which instrument is the user learning now?",
            "What instrument is the user currently learning?",
        ),
        "previous": (
            "Which instrument was the user learning before switching most recently?",
            "Before their latest switch, what instrument was the user learning?",
        ),
        "as_of": (
            "Which instrument was the user learning as of {date}?",
            "On {date}, what instrument was the user learning?",
        ),
    },
)  # fmt: skip

COFFEE = FactKind(
    name="coffee",
    noun="usual coffee order",
    values=(
        "flat white", "cortado", "oat latte", "double espresso", "cold brew", "macchiato", "mocha",
        "americano", "chai latte", "cappuccino", "matcha latte", "iced latte", "long black", "piccolo",
        "affogato",
    ),
    intro=(
        "My usual order at the café is a {v}.",
        "I always get a {v} on my way to work.",
        "Every morning I grab a {v} from the coffee kiosk.",
    ),
    update=(
        "I've switched my usual order to a {v}.",
        "I stopped getting a {old}; now it's a {v} every morning.",
        "These days my regular café order is a {v}.",
    ),
    other=(
        "My {rel} {name} always orders a {v}.",
        "{name}, my {rel}, swears by a {v} before meetings.",
        "My {rel} {name} made me try a {v} yesterday.",
    ),
    near_miss=(
        "I tried a {v} once, but I won't be ordering it again.",
        "The barista recommended a {v}, but I said no.",
    ),
    mention=(
        "The café spelled {v} wrong on my cup today.",
        "I spilled my {v} all over my notes this morning.",
    ),
    requests=(
        "Is it worth buying a machine to make it at home?",
        "How much caffeine is too much in a day?",
        "Can you help me work out what I spend on it per month?",
    ),
    replies=(
        "If you buy one most days, a grinder and a simple machine usually pay for themselves in a year.",
        "Most guidance puts the limit around four hundred milligrams a day for healthy adults.",
        "Multiply the price by the days you buy one per week, then by about four and a third.",
    ),
    questions={
        "current": (
            "What is the user's usual coffee order now?",
            "What does the user currently order at the café?",
        ),
        "previous": (
            "What was the user's usual coffee order before they last changed it?",
            "Before their latest switch, what did the user usually order at the café?",
        ),
        "as_of": (
            "What was the user's usual coffee order as of {date}?",
            "On {date}, what did the user usually order at the café?",
        ),
    },
)  # fmt: skip

APPOINTMENT = FactKind(
    name="appointment",
    noun="physio appointment",
    values=(
        "Monday at 9:15", "Tuesday at 10:30", "Wednesday at 14:00", "Thursday at 8:45", "Friday at 16:20",
        "Monday at 11:40", "Tuesday at 15:10", "Wednesday at 9:50", "Thursday at 13:25", "Friday at 10:05",
        "Saturday at 9:30", "Thursday at 17:00", "Monday at 18:15", "Wednesday at 12:20",
    ),
    intro=(
        "My physio appointment is on {v}.",
        "I've booked the physiotherapist for {v}.",
        "The clinic has me down for physio on {v}.",
    ),
    update=(
        "The clinic moved my physio appointment to {v}.",
        "I had to reschedule physio from {old} to {v}.",
        "Physio is now on {v} after the clinic called.",
    ),
    other=(
        "My {rel} {name} has a physio appointment on {v}.",
        "{name}, my {rel}, is seeing the dentist on {v}.",
        "My {rel} {name} booked a check-up for {v}.",
    ),
    near_miss=(
        "The clinic offered {v} for physio, but I couldn't make it, so I kept my slot.",
        "I nearly moved physio to {v}, but I left it as it was.",
    ),
    mention=(
        "I need to leave work early for physio on {v}, can you remind me?",
        "Physio on {v} clashes with a meeting, annoyingly.",
    ),
    requests=(
        "What exercises can I do at home for a stiff lower back?",
        "What should I bring to the session?",
        "How do I explain the appointment to my manager?",
    ),
    replies=(
        "Gentle knee-to-chest stretches, cat-cow and short walks usually help; stop if anything hurts.",
        "Bring loose clothes, any scan results, a list of your medication and your questions.",
        "Keep it short: mention a recurring medical appointment and offer how you will cover the time.",
    ),
    questions={
        "current": (
            "When is the user's physio appointment now (day and time)?",
            "On which day and at what time is the user's physio appointment currently booked?",
        ),
        "previous": (
            "When was the user's physio appointment before it was last rescheduled?",
            "Before the most recent rescheduling, on which day and time was the user's physio?",
        ),
        "as_of": (
            "As of {date}, when was the user's physio appointment scheduled?",
            "On {date}, what day and time was the user's physio appointment?",
        ),
    },
)  # fmt: skip

CAR = FactKind(
    name="car",
    noun="car",
    values=(
        "Skoda Octavia", "Honda Jazz", "Toyota Yaris", "Kia Niro", "Volvo V60", "Mazda MX-5", "Renault Zoe",
        "Fiat Panda", "Subaru Outback", "Peugeot 208", "Hyundai Kona", "Nissan Leaf", "Volkswagen Polo",
        "Seat Ibiza", "Citroen Berlingo",
    ),
    intro=(
        "I drive a {v}, which is fine for the school run.",
        "My car is a {v}, nothing fancy.",
        "I've had my {v} for about five years.",
    ),
    update=(
        "I sold the {old} and bought a {v}.",
        "We traded in our old car for a {v} last weekend.",
        "I picked up my new car today, a {v}.",
    ),
    other=(
        "My {rel} {name} just bought a {v}.",
        "{name}, my {rel}, drives a {v}.",
        "My {rel} {name} is test-driving a {v} tomorrow.",
    ),
    near_miss=(
        "I test-drove a {v}, but decided it was too expensive.",
        "The dealer tried to sell me a {v}, but I walked away.",
    ),
    mention=(
        "The {v} needs new tyres before winter.",
        "I got a parking ticket in the {v} this morning.",
    ),
    requests=(
        "How often should I check the tyre pressure?",
        "What should be in a winter emergency kit for the boot?",
        "Any tips to cut my fuel costs?",
    ),
    replies=(
        "Once a month and before long trips, with the tyres cold; the right pressures are on the door frame.",
        "Pack a blanket, a torch, a scraper, jump leads, water, snacks and a charged power bank.",
        "Drive smoothly, keep the tyres inflated, remove roof racks and combine short trips.",
    ),
    questions={
        "current": (
            "What car does the user drive now?",
            "Which car model is the user currently driving?",
        ),
        "previous": (
            "What car did the user drive before their most recent one?",
            "Before their latest car change, which model did the user drive?",
        ),
        "as_of": (
            "What car was the user driving as of {date}?",
            "On {date}, which car model did the user drive?",
        ),
    },
)  # fmt: skip

LANGUAGE = FactKind(
    name="language",
    noun="language course",
    values=(
        "Japanese", "Portuguese", "Dutch", "Greek", "Swahili", "Polish", "Finnish", "Hindi", "Czech",
        "Icelandic", "Hungarian", "Welsh", "Tagalog", "Norwegian", "Romanian",
    ),
    intro=(
        "I'm studying {v} on my lunch breaks.",
        "I've been learning {v} with an app for months.",
        "My evening class is in {v}.",
    ),
    update=(
        "I've dropped {old} and started learning {v} instead.",
        "I switched my language course to {v}.",
        "These days I study {v} instead.",
    ),
    other=(
        "My {rel} {name} is fluent in {v}.",
        "{name}, my {rel}, just started a {v} course.",
        "My {rel} {name} teaches {v} at the community college.",
    ),
    near_miss=(
        "I signed up for a {v} taster session, but I'm not continuing.",
        "A friend tried to talk me into learning {v}, but no thanks.",
    ),
    mention=(
        "I watched a film in {v} with subtitles last night.",
        "I found a great podcast in {v} for my commute.",
    ),
    requests=(
        "How many new words a day is realistic?",
        "How can I practise speaking without a partner?",
        "Should I learn the grammar first or just dive in?",
    ),
    replies=(
        "Ten to fifteen new words a day with spaced repetition is sustainable for most learners.",
        "Shadow audio, describe your day aloud, and record yourself to compare with native speakers.",
        "Mix both: learn the core patterns early, but use them in real sentences from the first week.",
    ),
    questions={
        "current": (
            "Which language is the user learning now?",
            "What language is the user currently studying?",
        ),
        "previous": (
            "Which language was the user learning before they last switched?",
            "Before their latest change of course, what language did the user study?",
        ),
        "as_of": (
            "Which language was the user learning as of {date}?",
            "On {date}, what language was the user studying?",
        ),
    },
)  # fmt: skip

GYM = FactKind(
    name="gym",
    noun="gym",
    values=(
        "Ironclad Fitness", "Pulse Athletic Club", "Summit Climbing Wall", "Harbourside Leisure Centre",
        "Foundry Strength", "Riverside Pool and Gym", "Apex Boxing Club", "Lotus Yoga Studio",
        "Granite Bouldering", "Velocity Cycle Studio", "Northside Barbell", "Tidal Swim Club",
        "Ember Pilates", "Crestline Athletics",
    ),
    intro=(
        "I'm a member at {v} and go three times a week.",
        "I train at {v} before work.",
        "My gym is {v}, right next to the office.",
    ),
    update=(
        "I cancelled my membership at {old} and joined {v}.",
        "I switched gyms and go to {v} now.",
        "My new gym is {v}, and it has a proper sauna.",
    ),
    other=(
        "My {rel} {name} just joined {v}.",
        "{name}, my {rel}, coaches at {v}.",
        "My {rel} {name} got a free trial at {v}.",
    ),
    near_miss=(
        "I did a trial day at {v}, but I'm not joining.",
        "{v} offered me a discount, but I'm staying where I am.",
    ),
    mention=(
        "{v} was packed this morning.",
        "I left my towel at {v} again.",
    ),
    requests=(
        "Can you suggest a three-day training split?",
        "What should I eat after a morning session?",
        "How do I avoid getting bored of the same routine?",
    ),
    replies=(
        "Try push, pull and legs on alternate days, with a rest day between each session.",
        "Protein and carbohydrates within a couple of hours: eggs on toast or yoghurt with oats work well.",
        "Change one exercise every few weeks, set a small goal and train with a friend now and then.",
    ),
    questions={
        "current": (
            "Which gym is the user a member of now?",
            "Where does the user currently train (which gym)?",
        ),
        "previous": (
            "Which gym did the user belong to before they last switched?",
            "Before their most recent change of gym, where did the user train?",
        ),
        "as_of": (
            "Which gym was the user a member of as of {date}?",
            "On {date}, at which gym did the user train?",
        ),
    },
)  # fmt: skip

TRAIN_KINDS: tuple[FactKind, ...] = (CITY, EMPLOYER, PET, CUISINE, INSTRUMENT, COFFEE)
EVAL_KINDS: tuple[FactKind, ...] = (APPOINTMENT, CAR, LANGUAGE, GYM)
KINDS: dict[str, FactKind] = {kind.name: kind for kind in TRAIN_KINDS + EVAL_KINDS}

RELATIONS: tuple[str, ...] = (
    "sister", "brother", "cousin", "coworker", "neighbour", "friend", "flatmate", "aunt", "uncle",
    "colleague", "manager", "brother-in-law",
)  # fmt: skip

# Given names for the people in distractor sessions; the generator gives every template family its own
# disjoint slice, so held-out families never share a name with training ones.
PEOPLE: tuple[str, ...] = (
    "Ana", "Tomas", "Priya", "Jonas", "Mei", "Kofi", "Ingrid", "Rafael", "Leila", "Oskar", "Nadia", "Emeka",
    "Sofia", "Mateo", "Yuki", "Lars", "Amara", "Diego", "Hana", "Felix", "Zara", "Ivan", "Chloe", "Tariq",
    "Elena", "Bruno", "Aisha", "Henrik", "Lucia", "Kenji", "Marta", "Samir", "Greta", "Pablo", "Noor",
    "Anton", "Iris", "Karim", "Freya", "Luca", "Dalia", "Viktor", "Rosa", "Omar", "Astrid", "Hugo", "Selin",
    "Milan", "Ayla", "Teodor", "Carmen", "Ravi", "Ines", "Stefan", "Maya", "Jamal", "Clara", "Emil", "Farah",
    "Nico", "Lena", "Arjun", "Petra", "Caio", "Wanda", "Idris", "Julia", "Mikko", "Beatriz", "Yusuf",
    "Alma", "Piotr", "Sana", "Dmitri", "Eva", "Ruben", "Asha", "Gustav", "Lola", "Hamid", "Vera", "Matteo",
    "Nia", "Sven", "Leona", "Tobias", "Esra", "Andrei", "Maren", "Kwame", "Olga", "Joaquin", "Talia",
    "Bastian", "Lina", "Hiro", "Dora", "Malik", "Signe", "Enzo", "Rhea", "Anders", "Celine", "Nikolai",
    "Paula", "Ismael", "Fiona", "Jorge", "Tessa", "Ahmed", "Livia", "Magnus", "Sara", "Dario", "Keiko",
    "Florin", "Helga", "Samuel", "Mira", "Arturo", "Elif", "Bjorn", "Noemi", "Rashid", "Agnes", "Tiago",
    "Ida", "Kaito", "Renata", "Leon", "Yara", "Filip", "Ottilie", "Marek", "Zainab", "Ulrich", "Pia",
    "Cyrus", "Linnea", "Vito", "Amina", "Jasper", "Rina", "Boris", "Liv", "Esteban", "Nora", "Aleksi",
    "Gemma", "Faisal", "Sunita", "Radek", "Maeve", "Tancredi", "Alba", "Hakon", "Daria", "Ebo", "Solveig",
    "Mads", "Irene", "Kamal", "Odile", "Luuk", "Chiara", "Bongani", "Edda", "Vikram", "Ruth", "Jonah",
    "Lise", "Orhan", "Wilma", "Sami", "Anouk", "Teo", "Maud", "Nabil", "Ebba", "Rocco", "Dina", "Kasper",
    "Zofia", "Ansel", "Ilse", "Thiago", "Runa", "Cormac", "Hedda", "Rafi", "Greet", "Lorenzo", "Suvi",
)  # fmt: skip

# Everyday exchanges for sessions that say nothing about the user's facts. Kept free of fact values
# (the generator checks this) but not of topic words, so keyword search meets realistic noise.
FILLER: tuple[tuple[str, str], ...] = (
    (
        "Can you give me a simple recipe for a lentil soup?",
        "Soften an onion, a carrot and garlic, add red lentils, stock and cumin, simmer, then blend.",
    ),
    (
        "Help me write a polite email declining a meeting invitation.",
        "Thank them for the invite, say you cannot attend, offer to read the notes and suggest another slot.",
    ),
    (
        "Why does my Python loop print the same number every time?",
        "You are probably printing a variable set before the loop; print the loop variable itself instead.",
    ),
    (
        "What are some good city break destinations for a long weekend?",
        "Compact cities with good public transport work best; pick one with a walkable old town and museums.",
    ),
    (
        "Suggest a beginner running plan for three days a week.",
        "Alternate one minute running with two minutes walking, adding a minute of running each week.",
    ),
    (
        "Can you recommend a few mystery novels?",
        "Try a classic locked-room mystery, a Nordic police procedural and a cosy village whodunit.",
    ),
    (
        "How do I make a monthly budget that I will actually stick to?",
        "List fixed costs, set a weekly amount for food and fun, and review it every Sunday for a month.",
    ),
    (
        "My tomato plants have yellow leaves. What is wrong?",
        "Often overwatering or a lack of nitrogen; let the soil dry a little and feed them every two weeks.",
    ),
    (
        "Explain compound interest like I'm twelve.",
        "You earn interest on your savings, then interest on that interest, so the pile grows faster.",
    ),
    (
        "What is a good way to learn touch typing?",
        "Practise ten minutes a day with a typing tutor, eyes on the screen, and build speed slowly.",
    ),
    (
        "Give me ideas for a rainy Sunday with two kids.",
        "Build a blanket fort, bake simple biscuits, do a treasure hunt indoors and have a film afternoon.",
    ),
    (
        "How do I remove a red wine stain from a carpet?",
        "Blot it, pour a little cold water, then use washing-up liquid and white vinegar and blot again.",
    ),
    (
        "Can you summarise the main causes of the French Revolution?",
        "Debt and taxes, food shortages, Enlightenment ideas and anger at the privileges of the nobility.",
    ),
    (
        "What should I pack for a two-day hiking trip?",
        "Layers, a waterproof, a map, water, snacks, a first-aid kit, a head torch and a warm hat.",
    ),
    (
        "Suggest a name for my book club's group chat.",
        "How about 'Between the Lines', 'Chapter and Chat' or 'The Unfinished Chapter Society'?",
    ),
    (
        "How do I fix a squeaky door hinge?",
        "Lift the pin out, clean it, coat it with a little oil or petroleum jelly and tap it back in.",
    ),
    (
        "Is it better to rent or buy a bike for a week-long holiday?",
        "For a week, renting is usually cheaper and saves you transporting it; check what insurance covers.",
    ),
    (
        "What are good stretches after sitting at a desk all day?",
        "Chest openers in a doorway, hip flexor lunges, neck rolls and a gentle seated twist.",
    ),
    (
        "Help me plan a surprise birthday picnic.",
        "Pick a park with shade, bring a blanket, finger food, a cake and a simple game; check the forecast.",
    ),
    (
        "How do spreadsheets handle dates internally?",
        "Most store a date as the number of days since a fixed starting day, with the time as a fraction.",
    ),
    (
        "Can you suggest a playlist theme for a dinner party?",
        "Try mellow soul and jazz early on, then lift the tempo with funk and disco as the evening goes.",
    ),
    (
        "What is the difference between weather and climate?",
        "Weather is what happens day to day; climate is the average pattern over decades.",
    ),
    (
        "How can I sleep better when it's hot?",
        "Keep curtains shut by day, use a cotton sheet, take a lukewarm shower and keep a fan near the bed.",
    ),
    (
        "Write a short thank-you note for a neighbour who watered my plants.",
        "Thank you so much for looking after my plants while I was away. They have never looked happier!",
    ),
    (
        "What is a good first board game for a family?",
        "A simple tile-laying or cooperative game that plays in half an hour is a good start.",
    ),
    (
        "How do I back up photos from my phone?",
        "Turn on automatic cloud backup, and once a month copy everything to an external drive as well.",
    ),
    (
        "Give me three quick lunch ideas I can take to work.",
        "A grain salad with feta, wraps with hummus and roast vegetables, or leftover curry with rice.",
    ),
    (
        "How do I calm down before a presentation?",
        "Breathe out slowly for longer than you breathe in, rehearse the opening and arrive early.",
    ),
    (
        "What is the best way to clean a cast iron pan?",
        "Rinse with hot water, scrub with salt if needed, dry it on the hob and rub in a thin layer of oil.",
    ),
    (
        "Can you explain what an index fund is?",
        "A fund that simply tracks a market index, so it holds many companies at low cost.",
    ),
    (
        "Any ideas for a low-key anniversary dinner at home?",
        "Cook something you had on an early date, set the table properly and leave the phones in a drawer.",
    ),
    (
        "How do I stop my houseplants from getting leggy?",
        "Give them more light, turn them each week and pinch out the tips to encourage bushier growth.",
    ),
)

OPENERS: tuple[str, ...] = ("Hi! ", "Hello again. ", "Morning! ", "Hey, quick one. ", "", "", "")

OTHER_REQUESTS: tuple[str, ...] = (
    "What would be a nice small gift for them?",
    "How should I congratulate them in a message?",
    "Can you suggest something fun we could do together next month?",
)
OTHER_REPLIES: tuple[str, ...] = (
    "A handwritten card with something personal, like a favourite snack or a small plant, always lands well.",
    "Keep it warm and short: say you are happy for them and suggest catching up soon.",
    "A cooking class, a day hike or a quiz night are easy to organise and good fun.",
)
NEAR_MISS_REPLIES: tuple[str, ...] = (
    "That sounds like a sensible call. It is good that you tried it before committing.",
    "Fair enough. Not every option fits, and it is useful to know what you do not want.",
)
MENTION_REPLIES: tuple[str, ...] = (
    "That sounds like quite a day. Anything I can help you plan for the rest of the week?",
    "Ha, these things happen. Let me know if you want a hand with anything else.",
)


def _pattern(template: str) -> str:
    """A template as a regex: ``{v}`` (and ``{old}``) become lazy captures, the rest is literal."""
    pieces = re.split(r"(\{v\}|\{old\})", template)
    out = []
    for piece in pieces:
        if piece == "{v}":
            out.append(r"(?P<v>[^.!?;]+?)")
        elif piece == "{old}":
            out.append(r"(?P<old>[^.!?;]+?)")
        else:
            out.append(re.escape(piece))
    return "".join(out)


@cache
def statement_patterns(kind_name: str) -> tuple[re.Pattern[str], ...]:
    """Regexes that read a stated value of the user's fact from a user line of a session."""
    kind = KINDS[kind_name]
    return tuple(re.compile(_pattern(t)) for t in kind.intro + kind.update)


@lru_cache(maxsize=8192)
def stated_values(kind_name: str, text: str) -> tuple[str, ...]:
    """Values the user states (introduces or changes) for that fact in a session's text, in order."""
    found: list[str] = []
    for line in text.splitlines():
        if not line.startswith("User: "):
            continue
        for pattern in statement_patterns(kind_name):
            for match in pattern.finditer(line):
                found.append(match.group("v").strip())
    return tuple(found)
