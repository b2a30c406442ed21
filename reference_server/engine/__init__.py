"""The engine: the pure, seeded planner of what a response says and how fast it is emitted.

`engine` draws the content and the timing of a `GenerationPlan` (`generation_plan`) from the
request's shape, with `tool_choice`, `scripted_output`, `filler_text` and `argsynth`;
`emission` is the token schedule the plan is emitted on; `cost_profile` is the simulated cost
of each piece of work. No clock, socket, thread or event loop: the same request plans the same
way in every process (the layering test holds this).
"""
