select * from {{ source('crm', 'contacts') }}
