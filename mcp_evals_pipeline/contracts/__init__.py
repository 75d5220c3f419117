"""Pydantic models for every record the pipeline reads or writes."""
