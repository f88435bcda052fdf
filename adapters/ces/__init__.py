"""CX Agent Studio / Customer Engagement Suite (CES) adapter."""

from tau_adapters.extras import require

require("ces")
