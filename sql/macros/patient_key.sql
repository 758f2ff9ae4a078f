-- The patient key (docs/models.md "Keys"): md5 of the JSON array [trial_id,
-- referral_subject_id], so no separator inside an id can make two patients one key.
-- `trial_id` and `referral_subject_id` are SQL expressions (column names) of the two ids.
{% macro patient_key(trial_id, referral_subject_id) %}
md5(json_array({{ trial_id }}, {{ referral_subject_id }})::varchar)
{% endmacro %}
