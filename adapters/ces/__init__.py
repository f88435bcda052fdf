"""CX Agent Studio / Customer Engagement Suite (CES) adapter."""
