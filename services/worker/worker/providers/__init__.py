"""AI providers behind one interface (:class:`worker.providers.base.Provider`): ``gemini``
(google-genai), ``openai`` (openai) and the offline ``local``; the chain with the one retry policy
(:mod:`worker.providers.chain`); the error classification from each provider's wire shapes
(:mod:`worker.providers.classify`); prompts, answers, prices and wire images."""
