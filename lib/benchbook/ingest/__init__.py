"""Readers: the campaign format (campaign.py) and formats people already have (formats.py)."""
