"""Retrieval evaluation on BEIR-layout collections, measured with ir-measures."""
