"""A SYNTHESISED workload for the consolidation benchmark (a fixed seed; nothing downloaded):
50 runs of the same 10 related bioinformatics questions, stored as the workflow stores them.

Each run, for each question: its plan, its answer and two tool results, in one of a few
wordings (repeated runs say the same things in slightly different words: near-duplicates);
now and then an answer carries one more useful sentence; and one tool run on a sample of its
own that failed with its own figures (distinct numbers and ids: never to be merged). The
recall questions ask for each question's answer, for each extra sentence, and for a sample's
own figures."""

from __future__ import annotations

import random
from dataclasses import dataclass

RUNS = 50
DAY = 86_400.0


@dataclass(frozen=True)
class Topic:
    question: str
    answers: tuple[str, ...]  # wordings of one answer
    extra: str  # a sentence some runs add to the answer
    plans: tuple[str, ...]
    tools: tuple[str, ...]  # wordings of a successful tool result
    step: str  # the step whose per-sample tool run fails
    ask: str  # a recall question for the answer
    key: str  # what the answer says (found in every wording)
    ask_extra: str  # a recall question for the extra sentence
    key_extra: str


TOPICS = [
    Topic("Which aligner suits RNA-seq reads?",
          ("STAR is the usual aligner for RNA-seq reads: it is splice-aware and fast.",
           "STAR is the usual aligner for RNA-seq reads; it is splice-aware and very fast.",
           "STAR is the usual aligner for RNA-seq reads, being splice-aware and fast."),
          "HISAT2 needs less memory when the machine is small.",
          ("read the aligner notes, compare the splice-aware aligners, answer",
           "read the aligner notes, then compare splice-aware aligners and answer"),
          ("read_document succeeded with {\"source\": \"rna_seq_aligners.md\"}: the notes compare "
           "aligners for spliced reads.",
           "read_document succeeded with {\"source\": \"rna_seq_aligners.md\"}: these notes compare "
           "aligners of spliced reads."),
          "alignment", "what aligner should I use for RNA-seq", "STAR",
          "is there an aligner that needs less memory on a small machine", "HISAT2"),
    Topic("How much memory does STAR need for the human genome?",
          ("STAR needs about 32 GB of RAM to build and load the human genome index.",
           "STAR needs about 32 GB of RAM to build and to load the human genome index.",
           "STAR needs roughly 32 GB of RAM to build and load the human genome index."),
          "Build the index once and reuse it across runs.",
          ("search the STAR manual for memory, read the index section, answer",
           "search the STAR manual about memory, read its index section, answer"),
          ("search succeeded with {\"query\": \"STAR memory human index\"}: the manual section on "
           "genome generation was found.",
           "search succeeded with {\"query\": \"STAR memory human index\"}: the manual's section on "
           "genome generation was found."),
          "indexing", "how much RAM for the STAR human index", "32 GB",
          "should the genome index be rebuilt on every run", "reuse it"),
    Topic("What quality threshold should I use to trim Illumina reads?",
          ("Trim Illumina reads at a Phred quality of 20 and drop reads shorter than 36 bases.",
           "Trim the Illumina reads at a Phred quality of 20 and drop reads shorter than 36 bases.",
           "Trim Illumina reads at Phred quality 20 and drop the reads shorter than 36 bases."),
          "Check the per-base quality plot before and after trimming.",
          ("read the trimming guide, pick the quality cut-off, answer",
           "read the trimming guide and pick a quality cut-off, then answer"),
          ("read_document succeeded with {\"source\": \"trimming_guide.md\"}: the guide lists "
           "quality cut-offs for short reads.",
           "read_document succeeded with {\"source\": \"trimming_guide.md\"}: this guide lists "
           "quality cut-offs for short reads."),
          "trimming", "which Phred score cut-off to trim reads", "Phred quality",
          "what plot should I look at around trimming", "per-base quality plot"),
    Topic("Which variant caller suits germline SNPs?",
          ("GATK HaplotypeCaller is the standard choice for germline SNPs and small indels.",
           "GATK HaplotypeCaller is the standard choice for germline SNPs and for small indels.",
           "GATK HaplotypeCaller is a standard choice for germline SNPs and small indels."),
          "Joint genotyping of all samples together improves the calls.",
          ("read the variant calling notes, compare callers, answer",
           "read the variant calling notes and compare the callers, answer"),
          ("read_document succeeded with {\"source\": \"variant_calling.md\"}: the notes compare "
           "germline callers.",
           "read_document succeeded with {\"source\": \"variant_calling.md\"}: these notes compare "
           "germline callers."),
          "calling", "best tool to call germline SNPs", "HaplotypeCaller",
          "does calling samples together help", "Joint genotyping"),
    Topic("How do I count reads per gene?",
          ("featureCounts counts reads per gene from the aligned BAM files and a GTF annotation.",
           "featureCounts counts the reads per gene from aligned BAM files and a GTF annotation.",
           "featureCounts counts reads per gene from the aligned BAM files with a GTF annotation."),
          "Set the strandedness to match the library preparation.",
          ("search for read counting tools, read the counting notes, answer",
           "search read counting tools, then read the counting notes and answer"),
          ("search succeeded with {\"query\": \"count reads per gene\"}: the counting notes were "
           "found.",
           "search succeeded with {\"query\": \"count reads per gene\"}: counting notes were "
           "found."),
          "counting", "tool to get gene-level read counts", "featureCounts",
          "which setting must match the library preparation when counting", "strandedness"),
    Topic("Which reference genome build should I use for human samples?",
          ("Use the GRCh38 human reference with the matching GENCODE annotation.",
           "Use the GRCh38 human reference together with the matching GENCODE annotation.",
           "Use GRCh38 as the human reference with the matching GENCODE annotation."),
          "Keep the same build for every sample of a study.",
          ("read the reference notes, check the annotation release, answer",
           "read the reference notes and check the annotation release, answer"),
          ("read_document succeeded with {\"source\": \"reference_genomes.md\"}: the notes list "
           "the human builds.",
           "read_document succeeded with {\"source\": \"reference_genomes.md\"}: these notes list "
           "the human builds."),
          "reference", "which human genome assembly to align against", "GRCh38",
          "can samples of one study use different builds", "same build for every sample"),
    Topic("How do I test for differential expression?",
          ("DESeq2 tests differential expression on raw gene counts with a negative binomial "
           "model.",
           "DESeq2 tests for differential expression on raw gene counts with a negative binomial "
           "model.",
           "DESeq2 tests differential expression on the raw gene counts with a negative binomial "
           "model."),
          "Never give it normalised counts.",
          ("read the expression analysis notes, choose the test, answer",
           "read the expression analysis notes and choose a test, answer"),
          ("read_document succeeded with {\"source\": \"differential_expression.md\"}: the notes "
           "describe count models.",
           "read_document succeeded with {\"source\": \"differential_expression.md\"}: these notes "
           "describe count models."),
          "testing", "which package finds differentially expressed genes", "DESeq2",
          "should the expression test get normalised counts", "normalised counts"),
    Topic("Which tool removes adapters from reads?",
          ("Cutadapt removes adapter sequences from the reads before alignment.",
           "Cutadapt removes the adapter sequences from reads before alignment.",
           "Cutadapt removes adapter sequences from reads before the alignment."),
          "Give it the adapter sequence of the library kit.",
          ("search for adapter trimming tools, read the manual, answer",
           "search adapter trimming tools and read the manual, answer"),
          ("search succeeded with {\"query\": \"adapter removal\"}: the adapter trimming manual "
           "was found.",
           "search succeeded with {\"query\": \"adapter removal\"}: an adapter trimming manual "
           "was found."),
          "adapters", "how to strip adapter sequences", "Cutadapt",
          "what input does adapter removal need from the library kit", "adapter sequence of the library kit"),
    Topic("How do I assess library duplication?",
          ("Picard MarkDuplicates reports the duplication rate of each library from its BAM file.",
           "Picard MarkDuplicates reports a duplication rate for each library from its BAM file.",
           "Picard MarkDuplicates reports the duplication rate of every library from its BAM file."),
          "High duplication often means too little input material.",
          ("read the QC notes, find the duplication metrics, answer",
           "read the QC notes and find the duplication metrics, answer"),
          ("read_document succeeded with {\"source\": \"qc_metrics.md\"}: the notes define the "
           "duplication metrics.",
           "read_document succeeded with {\"source\": \"qc_metrics.md\"}: these notes define the "
           "duplication metrics."),
          "duplication", "how to measure PCR duplicates in a library", "MarkDuplicates",
          "what does a high duplication rate usually mean", "too little input material"),
    Topic("Which peak caller suits ChIP-seq?",
          ("MACS2 calls ChIP-seq peaks against an input control sample.",
           "MACS2 calls the ChIP-seq peaks against an input control sample.",
           "MACS2 calls ChIP-seq peaks against the input control sample."),
          "Use the broad mode for histone marks.",
          ("read the ChIP-seq notes, compare the peak callers, answer",
           "read the ChIP-seq notes and compare peak callers, answer"),
          ("read_document succeeded with {\"source\": \"chip_seq.md\"}: the notes compare peak "
           "callers.",
           "read_document succeeded with {\"source\": \"chip_seq.md\"}: these notes compare peak "
           "callers."),
          "peaks", "what finds enriched regions in ChIP-seq data", "MACS2",
          "which mode for histone marks", "broad mode"),
]


@dataclass(frozen=True)
class Item:
    id: str
    session: str
    memory_type: str
    content: str
    created_at: float
    importance: float
    metadata: dict


@dataclass(frozen=True)
class RecallQuestion:
    text: str
    keys: tuple[str, ...]  # a hit is a memory whose content holds every key


def workload(now: float, seed: int = 4) -> tuple[list[Item], list[RecallQuestion]]:
    """The memories of RUNS runs (run r stored RUNS - r + 1 days before `now`) and the recall
    questions."""
    rng = random.Random(seed)
    items: list[Item] = []
    samples: list[tuple[str, str, int, int]] = []  # (step, sample, rate, reads)
    for run in range(RUNS):
        session = f"run-{run:02d}"
        when = now - (RUNS - run + 1) * DAY  # every run older than the 24 h grace
        for t, topic in enumerate(TOPICS):
            q = topic.question
            answer = rng.choice(topic.answers)
            if rng.random() < 0.2:
                answer = f"{answer} {topic.extra}"
            sample = f"S{run * len(TOPICS) + t + 1}"
            rate, reads = rng.randint(31, 89), rng.randint(2, 60)
            samples.append((topic.step, sample, rate, reads))
            base = f"{session}-q{t}"
            items += [
                Item(f"{base}-plan", session, "plan",
                     f"Plan for '{q}' succeeded: {rng.choice(topic.plans)}.", when + t * 60,
                     0.6, {"success": True}),
                Item(f"{base}-tool1", session, "tool_execution",
                     f"Question: {q}\nTool {rng.choice(topic.tools)}", when + t * 60 + 10, 0.5,
                     {"success": True}),
                Item(f"{base}-tool2", session, "tool_execution",
                     f"Question: {q}\nTool {rng.choice(topic.tools[::-1])}", when + t * 60 + 20,
                     0.5, {"success": True}),
                Item(f"{base}-failed", session, "tool_execution",
                     f"Tool run_{topic.step} on sample {sample} failed: duplication rate {rate}% "
                     f"with {reads} million reads.", when + t * 60 + 30, 0.5, {"success": False}),
                Item(f"{base}-answer", session, "answer", f"Question: {q}\nAnswer: {answer}",
                     when + t * 60 + 40, 0.7, {"success": True}),
            ]
    questions = [RecallQuestion(t.ask, (t.key,)) for t in TOPICS]
    questions += [RecallQuestion(t.ask_extra, (t.key_extra,)) for t in TOPICS]
    for step, sample, rate, reads in rng.sample(samples, 30):
        questions.append(RecallQuestion(
            f"what went wrong in {step} for sample {sample}",
            (f"sample {sample} failed", f"{rate}%", f"{reads} million")))
    return items, questions
