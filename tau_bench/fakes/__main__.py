"""`python -m tau_bench.fakes --responder module:function`: the fake OpenAI server as a
child process (`OpenAIServerProcess`). An entry point of its own: run as
`-m tau_bench.fakes.process`, a module the package has already imported would be
executed a second time, and Python warns on every start."""

from tau_bench.fakes.process import main

raise SystemExit(main())
