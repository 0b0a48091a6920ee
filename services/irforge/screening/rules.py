"""The screening rules: phrasings of an instruction addressed to a model, as regular expressions
over folded text (normalise.py: casefolded, accents dropped, whitespace collapsed).

Each rule has a name (what results report) and says what it catches. A rule is kept only if it
flags nothing in real ordinary text (SciFact's and NFCorpus' corpora and queries, see
irforge/screening/__init__.py for the measured figures): biomedical prose says "grade 3",
"acts as a", "highly relevant" and "the rules of", so those are never enough on their own.
"""

from __future__ import annotations

import re

# Where an imperative can start: the start of the text or a line, after sentence punctuation or a
# closing bracket/quote, or after a word that addresses someone ("you must", "please", "now").
_CLAUSE = r"(?:(?:^|[.!?:;,\n\]\)>\"'*#\-])\s*|\b(?:you|please|must|should|shall|will|now|always|only|then|just|simply)\s+)"
_GAP = r"[^.!?\n]{0,40}?"          # the rest of the same sentence, briefly
_QUOTE = "[\"'\u201c\u201d\u2018\u2019\u00ab\u00bb\\[`]"

_OVERRIDE_VERBS = (r"ignore|disregard|forget|override|overrule|neglect|set aside|throw away|discard|bypass|skip"
                   r"|(?:do not|don't|dont|never|stop|no longer) (?:follow|obey|listen to|heed)")
_OVERRIDE_OBJECTS = (r"instructions?|directions|directives?|prompts?|guidelines|rules|commands|orders|guidance"
                     r"|system message|(?:previous|prior|above|earlier|preceding|old|original|initial) (?:tasks?|text|context"
                     r"|messages?|conversation)|what (?:you were|you've been|you have been|you are) (?:told|asked|instructed)|everything (?:above|before|else|prior)|all (?:of )?(?:the )?(?:above|previous|prior)")



RULES: tuple[tuple[str, str, re.Pattern], ...] = tuple((name, why, re.compile(pattern)) for name, why, pattern in (
    ("override", "tells the reader to drop its instructions (English)",
     rf"\b(?:{_OVERRIDE_VERBS})\b{_GAP}\b(?:{_OVERRIDE_OBJECTS})\b"),
    ("override-de", "tells the reader to drop its instructions (German)",
     rf"\b(?:ignorier(?:e|en sie)?|vergiss|vergessen sie|missachte(?:n sie)?|uberspring(?:e|en sie)|verwirf)\b{_GAP}"
     r"\b(?:anweisung(?:en)?|instruktion(?:en)?|befehle|vorgaben|regeln|aufgabe(?:n)?|prompt|alles (?:davor|bisherige|vorherige|oben))\b"),
    ("override-fr", "tells the reader to drop its instructions (French)",
     rf"\b(?:ignore[zr]?|oublie[zr]?|ne (?:tiens|tenez) (?:pas|plus) compte)\b{_GAP}"
     r"\b(?:instructions?|consignes?|directives?|regles|commandes?|ordres)\b"),
    ("override-es-pt-it", "tells the reader to drop its instructions (Spanish, Portuguese, Italian)",
     rf"\b(?:ignora(?:r)?|ignore|ignorate|olvida(?:r)?|olvide|esquec[ae]|dimentica(?:te)?|descarta)\b{_GAP}"
     r"\b(?:instrucci(?:on|ones)|indicaciones|instruc(?:ao|oes)|istruzion[ei]|ordenes|reglas|regras|regole|comandos|comandi)\b"),
    ("override-nl", "tells the reader to drop its instructions (Dutch)",
     rf"\b(?:negeer|vergeet)\b{_GAP}\b(?:instructies|opdrachten|regels|aanwijzingen)\b"),
    ("override-ru", "tells the reader to drop its instructions (Russian)",
     r"(?:проигнорируи|игнорируи(?:те)?|забудь(?:те)?|не обращаи(?:те)? внимания на|отбрось)[^.!?\n]{0,40}?"
     r"(?:инструкци|указани|команд|правил|промпт)"),
    ("override-zh-ja", "tells the reader to drop its instructions (Chinese, Japanese)",
     r"(?:忽略|无视|無視|忘记|忘記|忘掉|不要理会|不要遵循)[^。！？\n]{0,20}?(?:指令|指示|说明|說明|提示|规则|規則|要求)"
     r"|(?:指示|命令|ルール|プロンプト)[^。！？\n]{0,20}?(?:無視|忘れ)"),
    ("override-ko", "tells the reader to drop its instructions or how to answer (Korean)",
     r"(?:지시|명령|지침|규칙|프롬프트)[^.\n]{0,12}?(?:무시|잊어)|(?:응답|대답|답|출력)하(?:세요|십시오|라)"),
    ("new-instructions", "announces new instructions, a new role or a system message",
     r"\b(?:(?:instructions|rules|prompt|task) (?:have|has) (?:been |now )?(?:changed|updated|amended|modified|replaced)"
     r"|(?:changed|updated|amended|replaced) (?:the|your) (?:instructions|rules|prompt|task)"
     r"|what would you (?:say|respond|reply|answer|output)|pretend (?:that )?(?:you|i)\b"
     r"|(?:begin|end)(?: of)? user input|you are now|from now on,? you|you (?:will|must|shall) now|your new (?:task|role|instructions?|goal)"
     r"|new (?:instructions?|task|rules|role|system prompt|directive)\s*[:\-]"
     r"|system (?:prompt|override|update|message|instructions?|notice|note)\s*[:\-]"
     r"|(?:begin|end)(?: of)?(?: the)? (?:new |old |out of date |outdated |previous |real |true )?instructions)\b"),
    ("chat-markup", "chat-template or prompt markup that only a model reads",
     r"<\|(?:endoftext|im_start|im_end|system|user|assistant|eot_id|start_header_id|end_header_id)\|>"
     r"|\[/?inst\]|<</?sys>>|###\s*(?:instruction|system|response|assistant)\b|%%%|^\s*(?:system|assistant|instructions?)\s*:"),
    ("addresses-a-model", "speaks to an AI, an assistant or a judge",
     r"\b(?:dear|attention|note (?:to|for)|hey|hello|message (?:to|for)|instructions? (?:to|for))\s+(?:the |any |all )?"
     r"(?:ai|llm|llms|language models?|assistant|chatbot|gpt|chatgpt|judge|grader|annotator|assessor|rater|labell?er)\b"
     r"|\b(?:if|when|since|because) you are an? (?:ai|llm|(?:large )?language model|assistant|chatbot|judge|grader"
     r"|annotator|assessor|rater|evaluator|relevance)\b|\byou are an? (?:ai|llm|(?:large )?language model|chatbot"
     r"|(?:relevance )?(?:judge|grader|assessor|rater|annotator))\b|\bas an? (?:ai|llm|(?:large )?language model)\b"),
    ("dictates-output", "tells the reader what to answer or how to begin its answer",
     r"\b(?:prefix|prepend|precede|preface)\s+(?:(?:your|yr|you|the|each|every)\s+)?(?:repl(?:y|ies)|responses?|answers?|output)\b"
     r"|\b(?:begin|start|end)\s+(?:your|yr|each|every)\s+(?:reply|response|answer|output)\b"
     r"|\b(?:in|to|from|of|with) (?:your|yr) (?:reply|response|answer|output)\b"
     r"|\b(?:please|only|just|simply) (?:respond|reply|answer|output|say|print|write the answer|put the)\b"
     r"|(?:(?:^|[.!?:;\n\]\)>\"'*#\-])\s*|\byou (?:must |should |will |shall )?)(?:say|respond with|reply with"
     r"|answer with|proclaim)\s+\S|\b(?:prefix|prepend) with\b|\boutput only\b"
     r"|\bneed you to (?:say|respond|reply|answer|output|print|write)\b"
     r"|\b(?:don't|do not|never) (?:write|add|give|include|provide) (?:any )?(?:commentary|explanations?|comments?)\b"
     rf"|{_CLAUSE}(?:respond|reply|answer|output|print|say|write|return|type|proclaim|state)\s+(?:only |just |exactly "
     rf"|simply |back )?(?:with |using )?(?:the (?:words?|phrase|number|label|digit|text) )?{_QUOTE}"
     r"|\b(?:answer|respond|reply|output|return|say|rate it|label it|score it)\s+(?:with |as )?(?:only |just )?"
     r"(?:(?:the |a )?(?:number|label|digit|score|grade|rating) )?[\"']?[0-3][\"']?(?=\s*(?:$|[.!,;\n]))"),
    ("reshapes-the-answer", "tells the reader to change, encode, translate or add to its own answer",
     r"\b(?:encrypt|encode|encipher|cipher|render|provide|write|rewrite|reverse|translate|express|modify|augment|enhance"
     r"|change|alter|format|convert|display|present|deliver|give|shorten|lengthen|end|finish|sign|close|conclude|scramble"
     r"|misspell|structure)\s+(?:your|yr) (?:answer|response|reply|output|message)s?\b"
     r"|(?:(?:^|[.!?:;\n\]\)>\"'*#\-])\s*|\b(?:please|can you|could you|you (?:must|should|will|shall) )\s*)"
     r"(?:reply|respond|answer|write) (?:in|using|backwards?|only in)\b"),
    ("claims-relevance", "tells the judge the text is relevant or what label to give",
     r"\brelevant (?:to|for) (?:every|any|all|each|whatever) (?:possible )?(?:quer|question|search|topic|request|user)"
     r"|\b(?:rate|label|score|grade|judge|mark|classify|assess|evaluate|consider)\s+(?:this|the|it)\s+"
     r"(?:(?:document|passage|text|article|abstract|page|result|paper|snippet)\s+)?(?:as\s+)?(?:an?\s+)?"
     r"(?:[0-3]\b|(?:perfectly |highly |very |maximally |fully |most )?relevant\b)"
     r"|\b(?:highest|maximum|top|best|full|perfect) relevance\b(?! (?:of|to|for) (?:the|these|this|our) (?:study|findings|results))"
     r"|\brelevance(?: label| score| grade| rating| judg(?:e)?ment)?\s*[:=]\s*[0-3]\b"
     r"|\b(?:correct|right|true|expected|final|only valid) (?:relevance |relevancy )?(?:label|answer|rating|relevance"
     r"|judg(?:e)?ment|verdict|score|grade)"
     r" (?:is|=|:)\s*[0-3]\b|\b(?:label|verdict)\s*[:=]\s*[0-3]\s*(?:$|\n)"),
    ("claims-relevance-other-languages", "tells the judge the text is relevant or what label to give (de, fr, es, it, pt, nl)",
     r"\brelevant\b[^.!?\n]{0,20}?\b(?:fur|bei) (?:jede|alle|jeder) (?:anfrage|frage|suche|suchanfrage)"
     r"|\b(?:fur|bei) (?:jede|alle|jeder) (?:anfrage|anfragen|frage|fragen|suche|suchanfrage)\b[^.!?\n]{0,30}?\brelevant\b"
     r"|\b(?:pertinente?s?|relevantes?|rilevanti?|relevante?)\s+(?:pour|para|per|voor)\s+(?:toute|toutes les|tous les|chaque"
     r"|n'importe quel(?:le)?|cualquier|toda|todas las|cada|qualquer|ogni|qualsiasi|tutte le|elke|iedere)\s+"
     r"(?:requete|question|recherche|consulta|pregunta|busqueda|pergunta|pesquisa|domanda|ricerca|query|vraag|zoekopdracht)"
     rf"|{_CLAUSE}(?:antworte|antworten sie|bewerte|bewerten sie|vergib|reponds|repondez|notez|attribuez|responde|responda"
     r"|contesta|conteste|califica|califique|asigna|rispondi|risponda|valuta|antwoord|beoordeel)\b[^.!?\n]{0,25}?"
     r"(?:\b(?:mit|avec|par|con|com|met)\s+)?(?:(?:la |le |die |note |nota |punteggio |cijfer )?)[\"'\u201e]?[0-3]\b"),
))
