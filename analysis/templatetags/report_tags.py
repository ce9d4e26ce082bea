from django import template

register = template.Library()


@register.filter
def get(mapping, key):
    """mapping[key] in templates (None when absent)."""
    if isinstance(mapping, dict):
        return mapping.get(key)
    return None


@register.filter
def score(value):
    if value is None:
        return "–"
    try:
        return f"{float(value):.2f}"
    except (TypeError, ValueError):
        return str(value)


@register.filter
def pvalue(value):
    if value is None:
        return "–"
    return f"{value:.3f}" if value >= 0.001 else f"{value:.1e}"
